package recognize

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzWatch: Feed never panics, and what it announces (with Finish) does
// not depend on how the arguments are split.
func FuzzWatch(f *testing.F) {
	seeds := []struct {
		tool string
		args string
	}{
		{"Write", `{"file_path":"/w/a.txt","content":"hello\nworld"}`},
		{"Write", `{"file_path":"d\u00e9j\ud83d\ude00","content":"x"}`},
		{"Edit", `{"x":{"file_path":"no"},"file_path":"e.go","old_string":"a","new_string":"b"}`},
		{"editor", `{"path":"c.txt","old_text":"a","new_text":"b","insert_line":null}`},
		{"editor", `{"command":"create","path":"c.txt","file_text":"x"}`},
		{"apply_patch", `{"input":"*** Begin Patch\n*** Add File: a\n+x\n*** Delete File: b\n*** End Patch"}`},
		{"apply_patch", "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n*** End Patch"},
		{"Bash", `{"command":"echo x > a && rm b"}`},
	}
	for _, s := range seeds {
		f.Add(s.tool, s.args, uint8(3))
	}
	tab := builtinTable()
	f.Fuzz(func(t *testing.T, tool, args string, split uint8) {
		for _, freeform := range []bool{false, true} {
			w := tab.Watch(tool, freeform)
			if w == nil {
				continue
			}
			whole := feedAll(w, args, 0)
			w = tab.Watch(tool, freeform)
			pieces := feedAll(w, args, int(split%17)+1)
			require.Equal(t, whole, pieces)
			w = tab.Watch(tool, freeform)
			bytes := feedAll(w, args, 1)
			require.Equal(t, whole, bytes)
			seen := map[string]bool{}
			for _, s := range whole {
				require.False(t, seen[s.Path], "announced twice: %q", s.Path)
				seen[s.Path] = true
				require.NotEmpty(t, s.Op)
			}
		}
	})
}

// FuzzEditsApply: Edits and Apply never panic, whatever the arguments
// and the file; Edits' paths are announced by a Watch over the same
// complete arguments.
func FuzzEditsApply(f *testing.F) {
	f.Add("MultiEdit", `{"file_path":"m.go","edits":[{"old_string":"a","new_string":"b"},{"old_string":"","new_string":"c"}]}`, "a a\n")
	f.Add("apply_diff", `{"path":"d.go","diff":"<<<<<<< SEARCH\n:start_line:2\n-------\nold\n=======\nnew\n>>>>>>> REPLACE\n"}`, "x\nold\nold\n")
	f.Add("apply_patch", `{"input":"*** Begin Patch\n*** Update File: a\n@@ ctx\n x\n-y\n+z\n*** End of File\n*** End Patch"}`, "ctx\nx\ny\n")
	f.Add("search_and_replace", `{"path":"r","search":"(a+)","replace":"$1b","use_regex":true,"start_line":2}`, "a\naa\n")
	f.Add("insert_content", `{"path":"i","line":2,"content":"z"}`, "a\nb")
	f.Add("editor", `{"path":"e","new_text":"x","insert_line":3}`, "")
	f.Add("replace_in_file", `{"path":"c","diff":"------- SEARCH\n a\n b\n=======\nz\n+++++++ REPLACE\n------- SEARCH\na\n=======\ny\n+++++++ REPLACE"}`, "a\n  a \nb\na\n")
	tab := builtinTable()
	f.Fuzz(func(t *testing.T, tool, args, before string) {
		edits, err := tab.Edits(tool, []byte(args), false)
		for _, e := range edits {
			after, aerr := e.Apply(before)
			if aerr == nil && e.Op == OpDelete {
				require.Equal(t, "", after)
			}
			_ = e.CallDiff()
		}
		if err != nil {
			return
		}
		w := tab.Watch(tool, false)
		if w == nil {
			return
		}
		announced := map[string]bool{}
		for _, s := range feedAll(w, args, 0) {
			announced[s.Path] = true
		}
		for _, e := range edits {
			if e.Op != OpModify || tool != "editor" { // an editor's undo says no op early
				require.True(t, announced[e.Path], "%q not announced for %s", e.Path, args)
			}
		}
	})
}
