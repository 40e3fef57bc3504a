package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParsePathArgs(t *testing.T) {
	pa, err := ParsePathArgs([]string{
		"Write:file_path", "Edit:file_path", "Write:file_path",
		"MultiEdit:file_path", "MultiEdit:edits.#.file_path",
		"apply_patch:patch(input)", "Move:paths",
	})
	require.NoError(t, err)
	require.Len(t, pa.byTool["Write"], 1, "duplicates ignored")

	_, err = ParsePathArgs([]string{"Write", ":x", "Edit:", "P:patch()", "Q:patch(x", "R:a..b", "S:edits.#", "Ok:file_path"})
	require.Error(t, err)
	for _, bad := range []string{`"Write"`, `":x"`, `"Edit:"`, `"P:patch()"`, `"Q:patch(x"`, `"R:a..b"`, `"S:edits.#"`} {
		require.Contains(t, err.Error(), bad)
	}
	require.NotContains(t, err.Error(), "Ok:file_path")
}

func TestPaths(t *testing.T) {
	pa, err := ParsePathArgs([]string{
		"Write:file_path",
		"MultiEdit:file_path", "MultiEdit:edits.#.file_path",
		"apply_patch:patch(input)",
		"Move:paths",
		"Nested:ops.#.files.#.path",
	})
	require.NoError(t, err)

	cases := []struct {
		name, tool, args string
		want             []string
		known            bool
		errMsg           string
	}{
		{"unknown tool", "Read", `{"file_path":"a"}`, nil, false, ""},
		{"single", "Write", `{"file_path":"src/a.go","content":"x"}`, []string{"src/a.go"}, true, ""},
		{"multi edit", "MultiEdit", `{"file_path":"a.go","edits":[{"file_path":"b.go"},{"file_path":"a.go"},{"file_path":"c.go"}]}`, []string{"a.go", "b.go", "c.go"}, true, ""},
		{"multi edit empty list", "MultiEdit", `{"file_path":"a.go","edits":[]}`, []string{"a.go"}, true, ""},
		{"array of strings", "Move", `{"paths":["x","y"]}`, []string{"x", "y"}, true, ""},
		{"nested #", "Nested", `{"ops":[{"files":[{"path":"p1"},{"path":"p2"}]},{"files":[{"path":"p3"}]}]}`, []string{"p1", "p2", "p3"}, true, ""},
		{"patch", "apply_patch", `{"input":"*** Begin Patch\n*** Update File: src/x.go\n@@\n-a\n+b\n*** Delete File: src/y.go\n*** End Patch\n"}`, []string{"src/x.go", "src/y.go"}, true, ""},
		{"missing", "Write", `{"content":"x"}`, nil, true, `argument "file_path": is missing`},
		{"missing in element", "MultiEdit", `{"file_path":"a.go","edits":[{"file_path":"b.go"},{"path":"c.go"}]}`, nil, true, `element 1: "file_path" is missing`},
		{"edits not array", "MultiEdit", `{"file_path":"a.go","edits":{"file_path":"b.go"}}`, nil, true, "not an array"},
		{"wrong type", "Write", `{"file_path":42}`, nil, true, "not a string"},
		{"null", "Write", `{"file_path":null}`, nil, true, "not a string"},
		{"empty string", "Write", `{"file_path":""}`, nil, true, "empty string"},
		{"array with non-string", "Move", `{"paths":["x",1]}`, nil, true, "element 1"},
		{"invalid json", "Write", `{"file_path":"a"`, nil, true, "not valid JSON"},
		{"bad patch", "apply_patch", `{"input":"just text"}`, nil, true, "no recognisable file header"},
		{"patch not string", "apply_patch", `{"input":{"a":1}}`, nil, true, "not a string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, known, err := pa.Paths(c.tool, []byte(c.args))
			require.Equal(t, c.known, known)
			if c.errMsg != "" {
				require.Error(t, err)
				require.Contains(t, err.Error(), c.errMsg)
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}

	var nilPA *PathArgs
	_, known, err := nilPA.Paths("Write", []byte(`{}`))
	require.False(t, known)
	require.NoError(t, err)
}
