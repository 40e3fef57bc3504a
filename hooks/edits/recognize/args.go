package recognize

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// argReader reads arguments, keeping the first error.
type argReader struct {
	root gjson.Result
	err  error
}

func (a *argReader) fail(err error) {
	if a.err == nil {
		a.err = err
	}
}

// get returns the value of spec, a gjson path or comma-separated
// alternatives: of top-level members, the one the arguments give first
// (as a Watch sees them); otherwise the first listed that exists.
func (a *argReader) get(spec string) gjson.Result {
	if spec == "" {
		return gjson.Result{}
	}
	alts := strings.Split(spec, ",")
	if len(alts) == 1 {
		return a.root.Get(spec)
	}
	simple := true
	for _, alt := range alts {
		simple = simple && simpleKey(alt)
	}
	if simple {
		var found gjson.Result
		a.root.ForEach(func(k, v gjson.Result) bool {
			for _, alt := range alts {
				if k.Str == alt {
					found = v
					return false
				}
			}
			return true
		})
		return found
	}
	for _, alt := range alts {
		if v := a.root.Get(alt); v.Exists() {
			return v
		}
	}
	return gjson.Result{}
}

func (a *argReader) has(spec string) bool { return a.get(spec).Exists() }

// str reads a string argument; a missing one is an error when required
// (and "" otherwise), as is one of another type.
func (a *argReader) str(spec string, required bool) string {
	v := a.get(spec)
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		if required {
			a.fail(fmt.Errorf("argument %q is missing", spec))
		}
		return ""
	case v.Type != gjson.String:
		a.fail(fmt.Errorf("argument %q is not a string", spec))
		return ""
	}
	return v.Str
}

// int reads an integer argument (a number, or a string of digits, as
// models send them).
func (a *argReader) int(spec string, required bool) int {
	v := a.get(spec)
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		if required {
			a.fail(fmt.Errorf("argument %q is missing", spec))
		}
		return 0
	case v.Type == gjson.Number && v.Num == float64(int(v.Num)) && v.Num >= 0 && v.Num < 1<<31:
		return int(v.Num)
	case v.Type == gjson.String:
		n := 0
		for _, c := range strings.TrimSpace(v.Str) {
			if c < '0' || c > '9' || n > 1<<27 {
				a.fail(fmt.Errorf("argument %q is not a line number", spec))
				return 0
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	a.fail(fmt.Errorf("argument %q is not a non-negative integer", spec))
	return 0
}

// bool reads a boolean argument (false when absent; "true" as a string
// counts).
func (a *argReader) bool(spec string) bool {
	v := a.get(spec)
	return v.Type == gjson.True || (v.Type == gjson.String && v.Str == "true")
}
