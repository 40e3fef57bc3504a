package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// PathArgs says which arguments of which tools are file paths. Build it with
// ParsePathArgs; it is immutable and safe for concurrent use. A nil *PathArgs
// knows no tool.
type PathArgs struct {
	byTool map[string][]pathArg
}

type pathArg struct {
	path  string // gjson path
	patch bool   // the value is an apply_patch patch, not a path
}

// ParsePathArgs builds a PathArgs from entries of the form "Tool:argpath",
// where argpath is a gjson path to a string or an array of strings (e.g.
// "Write:file_path", "MultiEdit:edits.#.file_path"), or "Tool:patch(argpath)"
// when the value is an apply_patch-format patch whose paths PatchPaths
// extracts. The tool name is everything before the first ':'. A tool may have
// several entries; duplicates are ignored. The error, when not nil, names
// every bad entry.
func ParsePathArgs(entries []string) (*PathArgs, error) {
	pa := &PathArgs{byTool: map[string][]pathArg{}}
	var bad []string
	for _, e := range entries {
		tool, arg, found := strings.Cut(e, ":")
		tool, arg = strings.TrimSpace(tool), strings.TrimSpace(arg)
		if !found || tool == "" || arg == "" {
			bad = append(bad, fmt.Sprintf(`%q: want "Tool:argpath" or "Tool:patch(argpath)"`, e))
			continue
		}
		pg := pathArg{path: arg}
		if strings.HasPrefix(arg, "patch(") {
			if !strings.HasSuffix(arg, ")") || len(arg) == len("patch()") {
				bad = append(bad, fmt.Sprintf(`%q: want "Tool:patch(argpath)" with a non-empty argpath`, e))
				continue
			}
			pg = pathArg{path: arg[len("patch(") : len(arg)-1], patch: true}
		}
		if msg := checkArgPath(pg.path); msg != "" {
			bad = append(bad, fmt.Sprintf("%q: %s", e, msg))
			continue
		}
		dup := false
		for _, have := range pa.byTool[tool] {
			if have == pg {
				dup = true
				break
			}
		}
		if !dup {
			pa.byTool[tool] = append(pa.byTool[tool], pg)
		}
	}
	if len(bad) > 0 {
		return nil, errors.New("invalid path argument entries: " + strings.Join(bad, "; "))
	}
	return pa, nil
}

// checkArgPath rejects argpaths that cannot name a string: empty segments
// and a trailing "#" (which counts elements).
func checkArgPath(p string) string {
	for _, seg := range splitPath(p) {
		if seg == "" {
			return "empty segment in argpath"
		}
	}
	if segs := splitPath(p); segs[len(segs)-1] == "#" {
		return `argpath must not end in "#" (that is a count)`
	}
	return ""
}

// splitPath splits a gjson path at unescaped dots.
func splitPath(p string) []string {
	var segs []string
	start := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++ // skip the escaped character
		case '.':
			segs = append(segs, p[start:i])
			start = i + 1
		}
	}
	return append(segs, p[start:])
}

// Paths returns the raw (not normalised) file paths a call of tool with the
// JSON arguments args touches, in entry order, de-duplicated. known is false
// (and err nil) when the table has no entry for tool. err is non-nil when
// args is not valid JSON, a configured argument is missing, is not a string or
// array of strings, is an empty string, or holds a patch PatchPaths cannot
// parse; the caller should then refuse the call because it cannot tell what
// it touches. For "#" array paths (edits.#.file_path) every element must
// have the argument.
func (pa *PathArgs) Paths(tool string, args []byte) (paths []string, known bool, err error) {
	if pa == nil {
		return nil, false, nil
	}
	entries, ok := pa.byTool[tool]
	if !ok {
		return nil, false, nil
	}
	if !gjson.ValidBytes(args) {
		return nil, true, fmt.Errorf("%s: arguments are not valid JSON", tool)
	}
	root := gjson.ParseBytes(args)
	seen := map[string]bool{}
	for _, e := range entries {
		var vals []string
		if err := collect(root, e.path, false, &vals); err != nil {
			return nil, true, fmt.Errorf("%s: argument %q: %w", tool, e.path, err)
		}
		for _, v := range vals {
			ps := []string{v}
			if e.patch {
				if ps, err = PatchPaths(v); err != nil {
					return nil, true, fmt.Errorf("%s: argument %q: %w", tool, e.path, err)
				}
			}
			for _, p := range ps {
				if !seen[p] {
					seen[p] = true
					paths = append(paths, p)
				}
			}
		}
	}
	return paths, true, nil
}

// collect appends the strings at path in v. A "#" segment iterates an array,
// requiring the rest of the path in every element.
func collect(v gjson.Result, path string, nested bool, out *[]string) error {
	segs := splitPath(path)
	for i, s := range segs {
		if s != "#" {
			continue
		}
		arr := v
		if i > 0 {
			prefix := strings.Join(segs[:i], ".")
			arr = v.Get(prefix)
			if !arr.Exists() {
				return fmt.Errorf("%q is missing", prefix)
			}
			if !arr.IsArray() {
				return fmt.Errorf("%q is not an array", prefix)
			}
		} else if !arr.IsArray() {
			return errors.New("is not an array")
		}
		rest := strings.Join(segs[i+1:], ".")
		for j, el := range arr.Array() {
			if err := collect(el, rest, true, out); err != nil {
				return fmt.Errorf("element %d: %w", j, err)
			}
		}
		return nil
	}
	r := v.Get(path)
	if !r.Exists() {
		if nested {
			return fmt.Errorf("%q is missing", path)
		}
		return errors.New("is missing")
	}
	if r.IsArray() {
		for j, el := range r.Array() {
			if el.Type != gjson.String || el.Str == "" {
				return fmt.Errorf("element %d is not a non-empty string", j)
			}
			*out = append(*out, el.Str)
		}
		return nil
	}
	if r.Type != gjson.String {
		return errors.New("is not a string or an array of strings")
	}
	if r.Str == "" {
		return errors.New("is an empty string")
	}
	*out = append(*out, r.Str)
	return nil
}
