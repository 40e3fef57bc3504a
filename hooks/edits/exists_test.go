package edits

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/hooks/edits/recognize"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

func TestExistingFromHistory(t *testing.T) {
	tab := recognize.NewTable(recognize.Builtin())
	msgs := []conv.Message{
		user("go"),
		// A partial read proves the file exists (history cannot tell its
		// content).
		assistantCall("r1", "Read", args("file_path", "/w/part.go", "offset", 10, "limit", 5)),
		result("r1", "Read", readResult("x\n"), false),
		assistantCall("w1", "Write", args("file_path", "/w/new.go", "content", "package x\n")),
		result("w1", "Write", "File created", false),
		// A failed write proves nothing.
		assistantCall("w2", "Write", args("file_path", "/w/failed.go", "content", "x")),
		result("w2", "Write", "permission denied", true),
		// Written, then removed by a shell command.
		assistantCall("w3", "Write", args("file_path", "/w/tmp.txt", "content", "x")),
		result("w3", "Write", "ok", false),
		assistantCall("b1", "Bash", args("command", "rm /w/tmp.txt")),
		result("b1", "Bash", "", false),
		// A call without its result yet changes nothing.
		assistantCall("w4", "Write", args("file_path", "/w/pending.go", "content", "x")),
	}
	got := existing(tab, msgs)
	require.True(t, got["/w/part.go"])
	require.True(t, got["/w/new.go"])
	require.False(t, got["/w/failed.go"])
	require.False(t, got["/w/tmp.txt"], "removed by rm")
	require.False(t, got["/w/pending.go"])

	// What history knows to exist, existing knows too.
	for path, f := range history(tab, msgs) {
		require.Equal(t, f.exists, got[path], path)
	}
}

// BenchmarkExistingVsHistory measures the stream watcher's question (does
// a file exist?) against the journal's full replay on a long history: 120
// rounds of reading a 10 KB file and editing it.
func BenchmarkExistingVsHistory(b *testing.B) {
	tab := recognize.NewTable(recognize.Builtin())
	var msgs []conv.Message
	content := strings.Repeat("line of some source code here\n", 340)
	for i := range 120 {
		p := fmt.Sprintf("/w/f%d.go", i%12)
		r, e := fmt.Sprintf("r%d", i), fmt.Sprintf("e%d", i)
		msgs = append(msgs,
			assistantCall(r, "Read", args("file_path", p)), result(r, "Read", readResult(content), false),
			assistantCall(e, "Edit", args("file_path", p, "old_string", "line of some source code here\n", "new_string", "changed\n", "replace_all", true)),
			result(e, "Edit", "ok", false))
	}
	b.Run("existing", func(b *testing.B) {
		for b.Loop() {
			existing(tab, msgs)
		}
	})
	b.Run("history", func(b *testing.B) {
		for b.Loop() {
			history(tab, msgs)
		}
	})
}
