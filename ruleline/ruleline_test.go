package ruleline

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestFields(t *testing.T) {
	for _, c := range []struct {
		line, name string
		kv         map[string]string
		order      []string
		err        string
	}{
		{line: "r1 a=1 b=two", name: "r1", kv: map[string]string{"a": "1", "b": "two"}, order: []string{"a", "b"}},
		{line: `  r2   msg="not here, sorry"  x=y `, name: "r2", kv: map[string]string{"msg": "not here, sorry", "x": "y"}, order: []string{"msg", "x"}},
		{line: "r3 match=`(?i)\\bgive me\\b`", name: "r3", kv: map[string]string{"match": `(?i)\bgive me\b`}, order: []string{"match"}},
		{line: "r4", name: "r4", kv: map[string]string{}},
		{line: "", err: "is empty"},
		{line: "a=1", err: "must start with a name"},
		{line: "r loose", err: `"loose" is not key=value`},
		{line: "r =x", err: `"=x" is not key=value`},
		{line: `r m="open`, err: "m: unterminated"},
		{line: `r m="a"b`, err: "m: text after the quoted value"},
		{line: "r a=1 a=2", err: "a is given twice"},
	} {
		name, kv, order, err := Fields(c.line)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.line, err, c.err)
			}
			continue
		}
		if err != nil || name != c.name || !equal(kv, c.kv) || !slices.Equal(order, c.order) {
			t.Errorf("%q: got %q %v %v %v", c.line, name, kv, order, err)
		}
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestValidName(t *testing.T) {
	for s, want := range map[string]bool{"a": true, "cheap-1.v_2": true, "": false, "a b": false, "ü": false, strings.Repeat("x", 65): false} {
		if ValidName(s) != want {
			t.Errorf("ValidName(%q) = %v", s, !want)
		}
	}
}

// FuzzFields: Fields never panics, and what it accepts round-trips: every
// key it reports is in order exactly once.
func FuzzFields(f *testing.F) {
	for _, s := range []string{"r a=1", `r m="x y"`, "r m=`raw`", "a=1", `r m="`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		_, kv, order, err := Fields(line)
		if err != nil {
			return
		}
		if len(kv) != len(order) {
			t.Fatalf("%q: %d keys, %d in order", line, len(kv), len(order))
		}
		for _, k := range order {
			if _, ok := kv[k]; !ok {
				t.Fatalf("%q: %q in order but not in kv", line, k)
			}
		}
	})
}

func TestPairs(t *testing.T) {
	type rule struct{ pat, val string }
	build := func(p, v string) (rule, error) {
		if v == "bad" {
			return rule{}, errors.New("no good")
		}
		return rule{p, v}, nil
	}
	got, err := Pairs([]string{" a = 1", "b*=two"}, "glob=value", build)
	if err != nil || !slices.Equal(got, []rule{{"a", "1"}, {"b*", "two"}}) {
		t.Fatalf("Pairs = %v, %v", got, err)
	}
	_, err = Pairs([]string{"nokey", "=1", "c=bad", "d=4"}, "glob=value", build)
	want := `"nokey" is not glob=value; "=1" is not glob=value; "c=bad": no good`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
}
