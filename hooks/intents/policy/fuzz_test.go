package policy

import (
	"strings"
	"testing"
)

func FuzzPatchPaths(f *testing.F) {
	for _, s := range []string{
		applyPatch,
		unifiedDiff,
		"*** Begin Patch\n*** Update File: a.go\n*** Move to: b.go\n@@\n-x\n+y\n*** End Patch\n",
		"diff --git a/x b/y b/x b/y\nrename from x\nrename to y\n",
		"--- \"a/q\"\n+++ b/q\n",
		"garbage\n",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, patch string) {
		paths, err := PatchPaths(patch)
		if err != nil {
			if paths != nil {
				t.Fatalf("paths %q with error %v", paths, err)
			}
			return
		}
		if len(paths) == 0 {
			t.Fatal("no paths and no error")
		}
		seen := map[string]bool{}
		for _, p := range paths {
			if p == "" {
				t.Fatal("empty path")
			}
			if !strings.Contains(patch, p) {
				t.Fatalf("path %q not in input", p)
			}
			if seen[p] {
				t.Fatalf("duplicate path %q", p)
			}
			seen[p] = true
		}
	})
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		goodPolicy,
		brokenPolicy,
		"version: 1\n",
		"version: 1\nintents:\n  - &i {id: INT-001, summary: s}\n  - *i\n",
		"version: 1\nintents: [{id: INT-001, summary: s, scope: {allow_glob: ['{a,b}/**', '[x']}}]\n",
		"- a\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "fuzz.yaml")
		if err != nil {
			if p != nil {
				t.Fatal("policy with error")
			}
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			_ = err.Error()
			return
		}
		if p == nil {
			t.Fatal("nil policy without error")
		}
		for _, id := range p.IDs() {
			if !IDPattern.MatchString(id) {
				t.Fatalf("bad id %q accepted", id)
			}
			in, ok := p.Intent(id)
			if !ok || in.ID != id {
				t.Fatalf("Intent(%q) lookup failed", id)
			}
			_ = in.ContextXML()
			_, _ = in.CheckPath("src/a.go")
			_, _ = in.MatchPattern(data)
			_, _ = in.DisallowsTool("Bash")
		}
		if p.CurrentIntentID != "" {
			if _, ok := p.Intent(p.CurrentIntentID); !ok {
				t.Fatalf("current_intent_id %q names no intent", p.CurrentIntentID)
			}
		}
	})
}
