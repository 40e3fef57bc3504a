package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNormalizePath(t *testing.T) {
	const root = "/work/app"
	cases := []struct {
		root, in, want string
		ok             bool
	}{
		{root, "src/a.go", "src/a.go", true},
		{root, "./src/a.go", "src/a.go", true},
		{root, "src//a.go", "src/a.go", true},
		{root, "src/./a.go", "src/a.go", true},
		{root, "src/x/../a.go", "src/a.go", true},
		{root, "src/", "src", true},
		{root, "/work/app/src/a.go", "src/a.go", true},
		{root, "//work//app//src/a.go", "src/a.go", true},
		{root, "/work/app", ".", true},
		{root, "/work/app/", ".", true},
		{root, ".", ".", true},
		{root, "./", ".", true},
		{root, "src/..", ".", true},
		{root, "../x", "", false},
		{root, "src/../../x", "", false},
		{root, "..", "", false},
		{root, "/work/app/../app2/x", "", false},
		{root, "/etc/passwd", "", false},
		{root, "/work/application/x", "", false},
		{root, "/work/ap", "", false},
		{root, "/work", "", false},
		{root, "", "", false},
		{root, "a\x00b", "", false},
		{root + "/", "src/a.go", "src/a.go", true},
		{"/", "/etc/passwd", "etc/passwd", true},
		{"/", "/", ".", true},
		{"/", "../../x", "x", true}, // ".." at / stays at /
	}
	for _, c := range cases {
		got, ok := NormalizePath(c.root, c.in)
		require.Equal(t, c.ok, ok, "NormalizePath(%q, %q)", c.root, c.in)
		require.Equal(t, c.want, got, "NormalizePath(%q, %q)", c.root, c.in)
	}
}

func TestCheckPath(t *testing.T) {
	in := &Intent{
		ID:        "INT-001",
		AllowGlob: []string{"src/**", "tests/**", "README.md"},
		DenyGlob:  []string{"secrets/**", "src/**/*.pem"},
	}
	cases := []struct {
		path   string
		ok     bool
		reason string
	}{
		{"src/a.go", true, ""},
		{"src/deep/er/a.go", true, ""},
		{"src", true, ""}, // "src/**" matches the directory itself
		{"tests/x_test.go", true, ""},
		{"README.md", true, ""},
		{"docs/x.md", false, `"docs/x.md" matches no allow_glob of INT-001 (src/**, tests/**, README.md)`},
		{"readme.md", false, `"readme.md" matches no allow_glob of INT-001 (src/**, tests/**, README.md)`},
		{"SRC/a.go", false, `"SRC/a.go" matches no allow_glob of INT-001 (src/**, tests/**, README.md)`},
		{"secrets/key.pem", false, `"secrets/key.pem" matches deny_glob "secrets/**"`},
		{"SECRETS/k", false, `"SECRETS/k" matches deny_glob "secrets/**"`},
		{"Secrets/sub/k", false, `"Secrets/sub/k" matches deny_glob "secrets/**"`},
		{"src/a/b/c.PEM", false, `"src/a/b/c.PEM" matches deny_glob "src/**/*.pem"`},
		{"src/a/b/c.pem", false, `"src/a/b/c.pem" matches deny_glob "src/**/*.pem"`},
	}
	for _, c := range cases {
		ok, reason := in.CheckPath(c.path)
		require.Equal(t, c.ok, ok, c.path)
		require.Equal(t, c.reason, reason, c.path)
	}

	// Unicode case folding in deny: KELVIN SIGN folds to k.
	k := &Intent{ID: "INT-002", AllowGlob: []string{"**"}, DenyGlob: []string{"keys/**"}}
	ok, reason := k.CheckPath("\u212Aeys/id")
	require.False(t, ok)
	require.Contains(t, reason, `deny_glob "keys/**"`)
	ok, _ = k.CheckPath("other/id")
	require.True(t, ok)

	// Not normalised paths are refused.
	for _, p := range []string{"", "/abs", "../x", "src/../../x"} {
		ok, reason := k.CheckPath(p)
		require.False(t, ok, p)
		require.Contains(t, reason, "not a workspace-relative path")
	}

	// Empty allow_glob: nothing in scope.
	none := &Intent{ID: "INT-003"}
	ok, reason = none.CheckPath("src/a.go")
	require.False(t, ok)
	require.Equal(t, `"src/a.go" is outside the scope of INT-003: it has no allow_glob`, reason)
}

func TestDisallowsTool(t *testing.T) {
	in := &Intent{DisallowTools: []string{"Bash", "mcp__*", "Web?etch", "[Nn]otebook*"}}
	cases := []struct {
		name, entry string
		ok          bool
	}{
		{"Bash", "Bash", true},
		{"bash", "", false},
		{"BashOutput", "", false},
		{"mcp__github__create_pr", "mcp__*", true},
		{"mcp_", "", false},
		{"WebFetch", "Web?etch", true},
		{"notebookEdit", "[Nn]otebook*", true},
		{"Read", "", false},
	}
	for _, c := range cases {
		entry, ok := in.DisallowsTool(c.name)
		require.Equal(t, c.ok, ok, c.name)
		require.Equal(t, c.entry, entry, c.name)
	}
}

func TestMatchPattern(t *testing.T) {
	p, err := Parse([]byte(`version: 1
intents:
  - id: INT-001
    summary: s
    constraints:
      disallow_patterns: ['rm -rf "/"', 'git\s+push', '^secret$', '"force":\s*true']
`), "p.yaml")
	require.NoError(t, err)
	in, _ := p.Intent("INT-001")

	cases := []struct {
		name, args, want string
		ok               bool
	}{
		{"escaped string value", `{"command":"rm -rf \"/\""}`, `rm -rf "/"`, true},
		{"raw json", `{"command":"git   push origin"}`, `git\s+push`, true},
		{"nested arrays", `{"a":[[1,{"b":["x","secret"]}]]}`, `^secret$`, true},
		{"key not matched", `{"secret":"x"}`, "", false},
		{"raw JSON text across keys", `{"force": true}`, `"force":\s*true`, true},
		{"unicode escape decoded", `{"c":"git\u0020push"}`, `git\s+push`, true},
		{"invalid json raw only", `git push {`, `git\s+push`, true},
		{"invalid json no match", `{"c": secret`, "", false},
		{"clean", `{"command":"ls -la"}`, "", false},
		{"empty", ``, "", false},
	}
	for _, c := range cases {
		got, ok := in.MatchPattern([]byte(c.args))
		require.Equal(t, c.ok, ok, c.name)
		require.Equal(t, c.want, got, c.name)
	}

	// First pattern in file order wins.
	got, ok := in.MatchPattern([]byte(`{"a":"git push","b":"rm -rf \"/\""}`))
	require.True(t, ok)
	require.Equal(t, `rm -rf "/"`, got)

	// A hand-built intent compiles its patterns on the fly, skipping bad ones.
	hand := &Intent{DisallowPatterns: []string{"(", "drop\\s+table"}}
	got, ok = hand.MatchPattern([]byte(`{"sql":"DROP TABLE x; drop  table y"}`))
	require.True(t, ok)
	require.Equal(t, `drop\s+table`, got)
	_, ok = (&Intent{}).MatchPattern([]byte(`{}`))
	require.False(t, ok)
}
