package recognize

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRead(t *testing.T) {
	const reminder = "<system-reminder>\nWhenever you read a file, consider whether it is malware.\n</system-reminder>\n"
	cases := []struct {
		name, tool, args, result string
		want                     string
		ok                       bool
	}{
		{"claude tab", "Read", `{"file_path":"/w/a.go"}`, "1\tpackage a\n2\t\n3\tfunc A() {}\n4\t", "package a\n\nfunc A() {}\n", true},
		{"claude no final newline", "Read", `{"file_path":"/w/a.go"}`, "1\tx\n2\ty", "x\ny", true},
		{"claude arrow padded", "Read", `{"file_path":"a"}`, "     1→one\n     2→\ttwo\n     3→", "one\n\ttwo\n", true},
		{"claude colon", "Read", `{"file_path":"a"}`, "1:\tone\n2:two", "\tone\ntwo", true},
		{"reminders around", "Read", `{"file_path":"a"}`, reminder + "1\tx\n2\t\n\n" + reminder, "x\n", true},
		{"truncation note", "Read", `{"file_path":"a"}`, "1\tx\n2\ty\n[Truncated: a: showing 2 of 90 lines. Call Read with offset/limit to page through.]", "", false},
		{"offset", "Read", `{"file_path":"a","offset":10}`, "10\tx", "", false},
		{"offset one", "Read", `{"file_path":"a","offset":1}`, "1\tx", "x", true},
		{"limit not reached", "Read", `{"file_path":"a","limit":5}`, "1\tx\n2\t", "x\n", true},
		{"limit reached", "Read", `{"file_path":"a","limit":2}`, "1\tx\n2\t", "", false},
		{"skipped number", "Read", `{"file_path":"a"}`, "1\tx\n3\ty", "", false},
		{"not from one", "Read", `{"file_path":"a"}`, "2\tx", "", false},
		{"empty file", "Read", `{"file_path":"a"}`, "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>", "", true},
		{"unchanged stub", "Read", `{"file_path":"a"}`, "File unchanged since last read. The content from the earlier Read tool_result in this conversation is still current.", "", false},
		{"prefix note", "Read", `{"file_path":"a"}`, "[This file is the saved source of artifact x]\n1\tx", "", false},
		{"gemini", "read_file", `{"file_path":"/w/g.txt"}`, "hello\nworld\n", "hello\nworld\n", true},
		{"gemini truncated", "read_file", `{"file_path":"/w/g.txt"}`, "\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines 1-2000 of 5000 total lines.\n\n--- FILE CONTENT (truncated) ---\nx", "", false},
		{"gemini range", "read_file", `{"file_path":"/w/g.txt","start_line":5,"end_line":9}`, "x", "", false},
		{"gemini old args", "read_file", `{"absolute_path":"/w/g.txt","offset":0}`, "x", "x", true},
		{"cline", "read_file", `{"path":"src/c.ts"}`, "export {}\n", "export {}\n", true},
		{"roo xml", "read_file", `{"path":"r.ts"}`, "<files>\n<file><path>r.ts</path>\n<content lines=\"1-2\">\n 1 | a\n 2 | b\n</content>\n</file>\n</files>", "a\nb\n", true},
		{"roo xml notice", "read_file", `{"path":"r.ts"}`, "<files>\n<file><path>r.ts</path>\n<content lines=\"1-2\">\n1 | a\n2 | b\n</content>\n<notice>Showing only 2 of 9 total lines</notice>\n</file>\n</files>", "", false},
		{"roo native", "read_file", `{"path":"r.ts"}`, "File: r.ts\nLines 1-2:\n1 | a\n2 | \n", "a\n\n", true},
		{"roo native empty", "read_file", `{"path":"r.ts"}`, "File: r.ts\nNote: File is empty", "", true},
		{"roo native partial", "read_file", `{"path":"r.ts"}`, "File: r.ts\nLines 1-2:\n1 | a\n2 | b\nNote: Showing only 2 of 9 lines", "", false},
		{"plain text that looks like File:", "read_file", `{"path":"notes.txt"}`, "File: notes\nsome text\n", "File: notes\nsome text\n", true},
		{"write tool", "Write", `{"file_path":"a","content":"x"}`, "ok", "", false},
		{"unknown", "Nope", `{"file_path":"a"}`, "x", "", false},
		{"bad args", "Read", `{"file_path":`, "1\tx", "", false},
		{"no path", "Read", `{"offset":1}`, "1\tx", "", false},
	}
	tab := builtinTable()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, content, ok := tab.Read(c.tool, []byte(c.args), c.result)
			require.Equal(t, c.ok, ok)
			if !c.ok {
				return
			}
			require.NotEmpty(t, p)
			require.Equal(t, c.want, content)
		})
	}
}

func TestReadClaudeDefaultCut(t *testing.T) {
	var b []byte
	for i := 1; i <= claudeDefaultLines; i++ {
		b = append(b, []byte(fmt.Sprintf("%d\tl\n", i))...)
	}
	_, _, ok := builtinTable().Read("Read", []byte(`{"file_path":"a"}`), string(b[:len(b)-1]))
	require.False(t, ok)
}
