package journal

import (
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/state"
)

func TestReverseDiffUndoesDiff(t *testing.T) {
	cases := []struct{ before, after string }{
		{"a\nb\nc\n", "a\nB\nc\n"},
		{"", "new file\n"},
		{"gone\n", ""},
		{"one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n", "one\n2\nthree\nfour\nfive\nsix\nseven\n8\n8.5\nnine\nten\n"},
		{"no newline", "no newline at all"},
		{"x\ny", "x\ny\nz\n"},
	}
	for _, c := range cases {
		d := Diff("f.txt", c.before, c.after)
		rev := ReverseDiff(d)
		// Every case is small enough for its hunks to cover the whole file:
		// the reverse's old side is the after-state, its new side the
		// before-state.
		from, to := sides(t, rev)
		if from != c.after || to != c.before {
			t.Errorf("%q → %q: reverse goes from %q to %q\n%s", c.before, c.after, from, to, rev)
		}
		// Each run of changes lists its removals first.
		prev := byte(0)
		for _, ln := range strings.Split(rev, "\n") {
			if strings.HasPrefix(ln, "---") || strings.HasPrefix(ln, "+++") || ln == "" {
				continue
			}
			if ln[0] == '-' && prev == '+' {
				t.Errorf("a removal follows an addition in\n%s", rev)
			}
			prev = ln[0]
		}
		if ReverseDiff(rev) != d {
			t.Errorf("reversing twice does not give the diff back:\n%s\n%s", d, ReverseDiff(rev))
		}
	}
}

func TestReverseModes(t *testing.T) {
	s := func(v string) *string { return &v }
	rv, err := Reverse(state.EditRecord{Seq: 3, Path: "a.go", Operation: state.EditModify, BeforeKnown: true, Before: s("x\n"), After: s("y\n")})
	if err != nil || rv.Mode != RevertRestore || *rv.Before != "x\n" || *rv.After != "y\n" || rv.Delete {
		t.Fatalf("restore: %+v %v", rv, err)
	}
	rv, err = Reverse(state.EditRecord{Path: "n.go", Operation: state.EditCreate, BeforeKnown: true, Before: s(""), After: s("y\n")})
	if err != nil || rv.Mode != RevertRestore || !rv.Delete || rv.Before != nil {
		t.Fatalf("create: %+v %v", rv, err)
	}
	rv, err = Reverse(state.EditRecord{Path: "p.go", Operation: state.EditModify, Diff: Diff("p.go", "a\n", "b\n")})
	if err != nil || rv.Mode != RevertPatch || !strings.Contains(rv.Patch, "-b\n+a\n") {
		t.Fatalf("patch: %+v %v", rv, err)
	}
	if _, err := Reverse(state.EditRecord{Path: "u.go", Operation: state.EditModify}); err == nil {
		t.Fatal("an entry with nothing known must not be revertible")
	}
	if _, err := Reverse(state.EditRecord{Path: "s.go", BeforeKnown: true, Before: s("same"), After: s("same")}); err == nil {
		t.Fatal("an entry that changed nothing must not be revertible")
	}
}

func FuzzReverseDiff(f *testing.F) {
	f.Add("a\nb\n", "a\nc\n")
	f.Add("", "x")
	f.Fuzz(func(t *testing.T, before, after string) {
		d := Diff("f", before, after)
		rev := ReverseDiff(d)
		if ReverseDiff(rev) != d {
			t.Fatalf("reversing twice changes %q", d)
		}
		from, to := sides(t, d)
		rfrom, rto := sides(t, rev)
		if from != rto || to != rfrom {
			t.Fatalf("reverse of %q does not swap its sides", d)
		}
	})
}

// sides returns the text a diff's hunks go from and to, all hunks
// concatenated (as parseHunks reads them).
func sides(t *testing.T, diff string) (from, to string) {
	t.Helper()
	if diff == "" { // before and after were equal
		return "", ""
	}
	hunks, err := parseHunks(diff)
	if err != nil {
		t.Fatalf("parsing %q: %v", diff, err)
	}
	for _, h := range hunks {
		from += h.Old
		to += h.New
	}
	return from, to
}
