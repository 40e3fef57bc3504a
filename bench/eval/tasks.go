package eval

import (
	"fmt"
	"regexp"
	"strings"
)

// The phases the tasks expect, matched against chapter titles
// (case-insensitive).
var (
	phaseResearch  = Phase{"research", regexp.MustCompile(`(?i)research|explor|read|investigat|understand|inspect|look|analy[sz]`)}
	phaseFix       = Phase{"fix", regexp.MustCompile(`(?i)fix|repair|correct|debug`)}
	phaseImplement = Phase{"implement", regexp.MustCompile(`(?i)implement|add|writ|build|code`)}
	phaseVerify    = Phase{"verify", regexp.MustCompile(`(?i)verif|test|check|validat`)}
	phaseDocument  = Phase{"document", regexp.MustCompile(`(?i)doc`)}
)

// Tasks returns the built-in tasks, in report order.
func Tasks() []*Task { return []*Task{fixAddTask(), addTitleTask()} }

// TaskNamed returns the built-in task called name.
func TaskNamed(name string) (*Task, bool) {
	for _, t := range Tasks() {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

// summaryPrompt asks for the long explanation a small output limit cuts.
const summaryPrompt = "Thanks. Now explain in your reply (no tools) what you changed and why, " +
	"in about 400 words, for the changelog."

// summaryLimit is the output limit of the summary turn: small enough that
// a real model's 400 words are cut and continued.
const summaryLimit = 300

// fixAddTask: a bug in calc.Add, found, fixed and tested under INT-001;
// the README is outside its scope.
func fixAddTask() *Task {
	t := &Task{
		Name:    "fix-add",
		Summary: "find and fix a bug in calc.Add, run the tests; the README is out of scope",
		Files: map[string]string{
			"calc/calc.go":      calcBuggy,
			"calc/calc_test.go": calcTest,
			"README.md":         "# calc\n\nA tiny arithmetic package.\n\n## Known bugs\n\n- Add subtracts instead of adding.\n",
		},
		Policy: `version: 1
current_intent_id: null
intents:
  - id: INT-001
    summary: "Fix the Add bug in package calc"
    scope:
      allow_glob: ["calc/**"]
    acceptance_criteria:
      - {id: AC-1, description: "Add returns a + b and the tests pass", status: pending}
  - id: INT-002
    summary: "Update the project documentation"
    scope:
      allow_glob: ["README.md", "docs/**"]
`,
		Prompts: []Prompt{
			{Text: "The tests of package calc fail: Add returns the wrong sum. Find the bug, fix it and run the tests."},
			{Text: summaryPrompt, Limit: summaryLimit},
		},
		Phases: []Phase{phaseResearch, phaseFix, phaseVerify},
		Check: func(ws *Workspace) (bool, string) {
			src, err := ws.Read("calc/calc.go")
			if err != nil {
				return false, "FAIL calc: " + err.Error()
			}
			if !regexp.MustCompile(`return\s+(a\s*\+\s*b|b\s*\+\s*a)\b`).MatchString(funcBody(src, "Add")) {
				return false, "--- FAIL: TestAdd\n    calc_test.go:6: Add(2, 3) = -1, want 5\nFAIL\nFAIL\tcalc\t0.002s"
			}
			return true, "ok  \tcalc\t0.002s"
		},
	}
	t.Scripts, t.Expected = fixAddScripts()
	return t
}

// addTitleTask: a new function strutil.Title with its test under INT-010,
// then its documentation under INT-011.
func addTitleTask() *Task {
	t := &Task{
		Name:    "add-title",
		Summary: "add strutil.Title with a test, then document it under a second intent",
		Files: map[string]string{
			"strutil/strutil.go":      strutilBase,
			"strutil/strutil_test.go": strutilTestBase,
			"docs/index.md":           "# Docs\n\n- strutil: string helpers (Reverse).\n",
		},
		Policy: `version: 1
current_intent_id: null
intents:
  - id: INT-010
    summary: "Add Title to package strutil, with a test"
    scope:
      allow_glob: ["strutil/**"]
    acceptance_criteria:
      - {id: AC-1, description: "Title upper-cases the first letter of every word", status: pending}
      - {id: AC-2, description: "TestTitle covers it", status: pending}
  - id: INT-011
    summary: "Document package strutil"
    scope:
      allow_glob: ["docs/**"]
`,
		Prompts: []Prompt{
			{Text: "Add a function Title(s string) string to package strutil that upper-cases the first letter " +
				"of every word, with a test, and run the tests."},
			{Text: "Now document Title in docs/strutil.md, then explain in your reply what you changed in this " +
				"session and why, in about 400 words.", Limit: summaryLimit},
		},
		Phases: []Phase{phaseResearch, phaseImplement, phaseVerify, phaseDocument},
		Check: func(ws *Workspace) (bool, string) {
			src, err := ws.Read("strutil/strutil.go")
			if err != nil {
				return false, "FAIL strutil: " + err.Error()
			}
			if !strings.Contains(src, "func Title(") {
				return false, "strutil/strutil_test.go:12:9: undefined: Title\nFAIL\tstrutil [build failed]"
			}
			test, _ := ws.Read("strutil/strutil_test.go")
			if !strings.Contains(test, "func TestTitle(") {
				return false, "ok  \tstrutil\t0.002s\n(no test of Title: TestTitle is missing)"
			}
			return true, "ok  \tstrutil\t0.002s"
		},
	}
	t.Scripts, t.Expected = addTitleScripts()
	return t
}

// funcBody is the text of Go function name in src, up to the next
// top-level func ("" when absent).
func funcBody(src, name string) string {
	i := strings.Index(src, "func "+name+"(")
	if i < 0 {
		return ""
	}
	rest := src[i+1:]
	if j := strings.Index(rest, "\nfunc "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

const calcBuggy = `package calc

// Add returns the sum of a and b.
func Add(a, b int) int {
	return a - b
}

// Mul returns the product of a and b.
func Mul(a, b int) int {
	return a * b
}
`

const calcFixed = `package calc

// Add returns the sum of a and b.
func Add(a, b int) int {
	return a + b
}

// Mul returns the product of a and b.
func Mul(a, b int) int {
	return a * b
}
`

const calcTest = `package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Fatalf("Add(2, 3) = %d, want 5", got)
	}
}

func TestMul(t *testing.T) {
	if got := Mul(2, 3); got != 6 {
		t.Fatalf("Mul(2, 3) = %d, want 6", got)
	}
}
`

const readmeFixed = "# calc\n\nA tiny arithmetic package.\n"

const strutilBase = `package strutil

// Reverse returns s with its runes in reverse order.
func Reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}
`

const strutilTestBase = `package strutil

import "testing"

func TestReverse(t *testing.T) {
	if got := Reverse("abc"); got != "cba" {
		t.Fatalf("Reverse(abc) = %q", got)
	}
}
`

var strutilWithTitle = strings.Replace(strutilBase, "package strutil\n", "package strutil\n\nimport \"unicode\"\n", 1) + `
// Title returns s with the first letter of every word upper-cased.
func Title(s string) string {
	r := []rune(s)
	start := true
	for i, c := range r {
		if start && unicode.IsLetter(c) {
			r[i] = unicode.ToUpper(c)
		}
		start = unicode.IsSpace(c)
	}
	return string(r)
}
`

var strutilTestWithTitle = strutilTestBase + `
func TestTitle(t *testing.T) {
	if got := Title("hello big world"); got != "Hello Big World" {
		t.Fatalf("Title = %q", got)
	}
}
`

const strutilDoc = "# strutil\n\n## Title\n\n`Title(s string) string` upper-cases the first letter of every word of s.\n"

// longExplanation is a summary reply long enough to be cut: n paragraphs
// about subject.
func longExplanation(subject string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "Paragraph %d on %s: the change is small and the reasoning behind it is written down here "+
			"so that a reader of the changelog can follow it without opening the diff. ", i, subject)
	}
	return strings.TrimSpace(b.String())
}
