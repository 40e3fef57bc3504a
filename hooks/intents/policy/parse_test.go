package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const goodPolicy = `version: 1
current_intent_id: INT-002
intents:
  - id: INT-001
    summary: "Fix the login bug"
    scope:
      allow_glob: ["./src/auth/**", "tests/**"]
      deny_glob: ["src/auth/secrets/**"]
    constraints:
      disallow_tools: ["Bash", "mcp__*"]
      disallow_patterns: ["rm\\s+-rf", "git\\s+push"]
    acceptance_criteria:
      - id: AC-1
        description: "login works"
        status: met
      - id: AC-2
        description: "tests pass"
  - id: INT-002
    summary: Docs only
    scope:
      allow_glob: []
`

func TestParseGood(t *testing.T) {
	p, err := Parse([]byte(goodPolicy), "p.yaml")
	require.NoError(t, err)
	require.Equal(t, "p.yaml", p.File)
	require.Equal(t, 1, p.Version)
	require.Equal(t, "INT-002", p.CurrentIntentID)
	require.Equal(t, []string{"INT-001", "INT-002"}, p.IDs())
	sum := sha256.Sum256([]byte(goodPolicy))
	require.Equal(t, hex.EncodeToString(sum[:]), p.Hash)
	require.False(t, p.LoadedAt.IsZero())

	in, ok := p.Intent("INT-001")
	require.True(t, ok)
	require.Equal(t, "Fix the login bug", in.Summary)
	require.Equal(t, []string{"src/auth/**", "tests/**"}, in.AllowGlob, "leading ./ stripped")
	require.Equal(t, []string{"src/auth/secrets/**"}, in.DenyGlob)
	require.Equal(t, []string{"Bash", "mcp__*"}, in.DisallowTools)
	require.Equal(t, []string{`rm\s+-rf`, `git\s+push`}, in.DisallowPatterns)
	require.Equal(t, []Criterion{
		{ID: "AC-1", Description: "login works", Status: StatusMet},
		{ID: "AC-2", Description: "tests pass", Status: StatusPending},
	}, in.Criteria)

	in2, ok := p.Intent("INT-002")
	require.True(t, ok)
	require.Empty(t, in2.AllowGlob)
	_, ok = p.Intent("INT-404")
	require.False(t, ok)

	var nilPolicy *Policy
	_, ok = nilPolicy.Intent("INT-001")
	require.False(t, ok)
	require.Nil(t, nilPolicy.IDs())
}

func TestParseMinimal(t *testing.T) {
	for _, src := range []string{
		"version: 1\n",
		"version: 1\ncurrent_intent_id: null\nintents: []\n",
		"version: 1\ncurrent_intent_id:\nintents:\n",
	} {
		p, err := Parse([]byte(src), "p.yaml")
		require.NoError(t, err, src)
		require.Empty(t, p.Intents)
		require.Equal(t, "", p.CurrentIntentID)
	}
}

// brokenPolicy has several problems at once; the comments give line numbers.
const brokenPolicy = `version: 2
current_intent_id: INT-999
intents:
  - id: INT-001
    summary: ""
    scope:
      allow_glob: "src/**"
      deny_glob: ["/etc/**", "a/../b", "[oops"]
    constraints:
      disallow_patterns: ["(unclosed"]
      disallow_tool: ["Bash"]
    acceptance_criteria:
      - id: AC-1
        status: done
  - id: 7
    summary: ok
  - id: INT-001
    summary: dup
  - id: int-2
    summary: bad
    scope: [x]
`

func TestParseProblems(t *testing.T) {
	p, err := Parse([]byte(brokenPolicy), "bad.yaml")
	require.Nil(t, p)
	var pe *ParseError
	require.True(t, errors.As(err, &pe))
	require.Equal(t, "bad.yaml", pe.File)

	type want struct {
		line int
		path string
		msg  string
	}
	wants := []want{
		{1, "version", "unsupported version 2"},
		{2, "current_intent_id", `"INT-999" names no intent`},
		{5, "intents[0].summary", "must not be empty"},
		{7, "intents[0].scope.allow_glob", "must be a list of strings, got a string"},
		{8, "intents[0].scope.deny_glob[0]", "relative to the workspace root"},
		{8, "intents[0].scope.deny_glob[1]", "relative to the workspace root"},
		{8, "intents[0].scope.deny_glob[2]", "invalid glob"},
		{10, "intents[0].constraints.disallow_patterns[0]", "invalid regexp: error parsing regexp: missing closing )"},
		{11, "intents[0].constraints.disallow_tool", "unknown key"},
		{13, "intents[0].acceptance_criteria[0].description", "required"},
		{14, "intents[0].acceptance_criteria[0].status", `invalid status "done"`},
		{15, "intents[1].id", "must be a string, got an integer"},
		{17, "intents[2].id", `duplicate id "INT-001" (first at line 4)`},
		{19, "intents[3].id", `invalid id "int-2"`},
		{21, "intents[3].scope", "must be a mapping, got a list"},
	}
	require.Len(t, pe.Problems, len(wants), "%v", err)
	for i, w := range wants {
		got := pe.Problems[i]
		require.Equal(t, w.line, got.Line, "problem %d: %+v", i, got)
		require.Equal(t, w.path, got.Path, "problem %d: %+v", i, got)
		require.Contains(t, got.Msg, w.msg, "problem %d", i)
	}
	msg := err.Error()
	require.True(t, strings.HasPrefix(msg, "bad.yaml:1: version: unsupported version 2"), msg)
	require.Contains(t, msg, "; bad.yaml:17: intents[2].id: duplicate id")
	require.Equal(t, len(wants)-1, strings.Count(msg, "; "))
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, src string
		line      int
		msg       string
	}{
		{"empty", "", 0, "empty policy file"},
		{"comment only", "# nothing\n", 0, "empty policy file"},
		{"null", "~\n", 1, "empty policy file"},
		{"list", "- a\n", 1, "top level must be a mapping, got a list"},
		{"scalar", "hello\n", 1, "top level must be a mapping, got a string"},
		{"syntax", "version: 1\nintents:\n  - id: [\n", 3, "YAML syntax error"},
		{"tab", "version: 1\n\tfoo: 2\n", 2, "YAML syntax error"},
		{"no version", "intents: []\n", 1, "version: required"},
		{"version string", "version: \"1\"\n", 1, "must be an integer, got a string"},
		{"two docs", "version: 1\n---\nversion: 1\n", 2, "more than one YAML document"},
		{"dup key", "version: 1\nversion: 1\n", 2, "duplicate key (first at line 1)"},
		{"alias", "version: 1\nx: &a [1]\n", 2, "unknown key"},
		{"alias used", "version: 1\nintents:\n  - &i {id: INT-001, summary: s}\n  - *i\n", 4, "aliases are not supported"},
		{"current not string", "version: 1\ncurrent_intent_id: 5\n", 2, "must be a string"},
		{"intents mapping", "version: 1\nintents: {a: 1}\n", 2, "must be a list, got a mapping"},
		{"missing id and summary", "version: 1\nintents:\n  - scope: {}\n", 3, "required"},
		{"empty tool", "version: 1\nintents:\n  - id: INT-001\n    summary: s\n    constraints: {disallow_tools: ['']}\n", 5, "empty tool name"},
		{"empty pattern", "version: 1\nintents:\n  - id: INT-001\n    summary: s\n    constraints: {disallow_patterns: ['']}\n", 5, "empty pattern"},
		{"glob dot slash only", "version: 1\nintents:\n  - id: INT-001\n    summary: s\n    scope: {allow_glob: ['./']}\n", 5, "empty glob"},
		{"glob number", "version: 1\nintents:\n  - id: INT-001\n    summary: s\n    scope:\n      allow_glob:\n        - 12\n", 7, "must be a string, got an integer"},
		{"criterion not mapping", "version: 1\nintents:\n  - id: INT-001\n    summary: s\n    acceptance_criteria: [x]\n", 5, "must be a mapping"},
		{"dup criterion", "version: 1\nintents:\n  - id: INT-001\n    summary: s\n    acceptance_criteria:\n      - {id: A, description: d}\n      - {id: A, description: d}\n", 7, "duplicate criterion id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse([]byte(c.src), "f.yaml")
			require.Nil(t, p)
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			require.NotEmpty(t, pe.Problems)
			found := false
			for _, pr := range pe.Problems {
				if pr.Line == c.line && strings.Contains(pr.String(), c.msg) {
					found = true
				}
			}
			require.True(t, found, "want line %d %q in %v", c.line, c.msg, err)
		})
	}
}

func TestParseErrorFormat(t *testing.T) {
	e := &ParseError{File: "f.yaml", Problems: []Problem{
		{Line: 3, Path: "intents[0].id", Msg: "bad"},
		{Line: 0, Path: "", Msg: "empty policy file"},
	}}
	require.Equal(t, "f.yaml:3: intents[0].id: bad; f.yaml: empty policy file", e.Error())
}
