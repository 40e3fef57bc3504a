package journal

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/state"
)

func strp(s string) *string { return &s }

func writeFile(t *testing.T, path, content string, mode fs.FileMode) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), mode))
	require.NoError(t, os.Chmod(path, mode))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// record is an entry as the edits feature journals it: Diff from Before
// and After when both are known.
func record(path, op string, before, after *string) state.EditRecord {
	rec := state.EditRecord{Seq: 3, Path: path, Operation: op, Status: state.EditApplied,
		Before: before, After: after, BeforeKnown: before != nil}
	if before != nil && after != nil {
		rec.Diff = Diff(path, *before, *after)
	}
	return rec
}

// noTempFiles asserts Apply left no temporary file next to the target.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.NotContains(t, e.Name(), ".shepherd-", "temporary file left behind")
	}
}

func TestApplyRestoreRoundTrip(t *testing.T) {
	root := t.TempDir()
	before, after := "package a\n\nfunc A() int { return 1 }\n", "package a\n\nfunc A() int { return 2 }\n"
	writeFile(t, filepath.Join(root, "src/a.go"), after, 0o600)

	rv, err := Reverse(record("src/a.go", state.EditRewrite, &before, &after))
	require.NoError(t, err)
	require.Equal(t, RevertRestore, rv.Mode)
	require.NoError(t, Apply(root, rv))

	require.Equal(t, before, readFile(t, filepath.Join(root, "src/a.go")))
	info, err := os.Stat(filepath.Join(root, "src/a.go"))
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), info.Mode().Perm(), "the file keeps its mode")
	noTempFiles(t, filepath.Join(root, "src"))

	// Applying it again refuses: the file is no longer the after-state.
	err = Apply(root, rv)
	require.ErrorIs(t, err, ErrChanged)
	require.Equal(t, before, readFile(t, filepath.Join(root, "src/a.go")))
}

func TestApplyAbsolutePathIgnoresRoot(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "abs.txt")
	writeFile(t, p, "new\n", 0o644)
	rv, err := Reverse(record(p, state.EditRewrite, strp("old\n"), strp("new\n")))
	require.NoError(t, err)
	require.NoError(t, Apply(filepath.Join(dir, "elsewhere"), rv))
	require.Equal(t, "old\n", readFile(t, p))
}

func TestApplyCreateIsUndoneByDeleting(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "new.txt")
	writeFile(t, p, "hello\n", 0o644)
	rv, err := Reverse(record("new.txt", state.EditCreate, strp(""), strp("hello\n")))
	require.NoError(t, err)
	require.True(t, rv.Delete)
	require.NoError(t, Apply(root, rv))
	_, err = os.Stat(p)
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestApplyDeleteIsUndoneByRecreating(t *testing.T) {
	root := t.TempDir()
	rv, err := Reverse(record("gone/file.txt", state.EditDelete, strp("was here\n"), strp("")))
	require.NoError(t, err)
	require.NoError(t, Apply(root, rv))
	require.Equal(t, "was here\n", readFile(t, filepath.Join(root, "gone/file.txt")))

	// Now that it exists again, a second revert refuses.
	require.ErrorIs(t, Apply(root, rv), ErrChanged)
}

func TestApplyRestoreRefusesChangedFile(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "a.txt")
	rv, err := Reverse(record("a.txt", state.EditRewrite, strp("v1\n"), strp("v2\n")))
	require.NoError(t, err)

	writeFile(t, p, "v3: someone else's work\n", 0o644)
	err = Apply(root, rv)
	require.ErrorIs(t, err, ErrChanged)
	require.Equal(t, "v3: someone else's work\n", readFile(t, p), "nothing written")
	noTempFiles(t, root)

	require.NoError(t, os.Remove(p))
	require.ErrorIs(t, Apply(root, rv), ErrChanged, "a file that is gone is not restored")
	_, err = os.Stat(p)
	require.ErrorIs(t, err, fs.ErrNotExist)

	// An entry that created the file: removing it needs the file as created.
	create, err := Reverse(record("a.txt", state.EditCreate, strp(""), strp("made\n")))
	require.NoError(t, err)
	writeFile(t, p, "made, then changed\n", 0o644)
	require.ErrorIs(t, Apply(root, create), ErrChanged)
	require.Equal(t, "made, then changed\n", readFile(t, p))
}

const patchBefore = `package main

import "fmt"

func main() {
	fmt.Println("one")
	fmt.Println("two")
	fmt.Println("three")
}

func helper() string {
	return "unchanged"
}

func other() string {
	return "tail"
}
`

func TestApplyPatchRoundTripFromDiff(t *testing.T) {
	root := t.TempDir()
	after := strings.Replace(patchBefore, `"two"`, `"TWO"`, 1)
	after = strings.Replace(after, `"tail"`, `"end"`, 1)
	after = strings.TrimSuffix(after, "\n") // and drop the final newline
	writeFile(t, filepath.Join(root, "main.go"), after, 0o755)

	// Only the diff is known (the session never saw the whole file).
	rec := state.EditRecord{Seq: 7, Path: "main.go", Operation: state.EditModify, Diff: Diff("main.go", patchBefore, after)}
	require.Contains(t, rec.Diff, `\ No newline at end of file`)
	rv, err := Reverse(rec)
	require.NoError(t, err)
	require.Equal(t, RevertPatch, rv.Mode)
	require.NoError(t, Apply(root, rv))
	require.Equal(t, patchBefore, readFile(t, filepath.Join(root, "main.go")))
	info, err := os.Stat(filepath.Join(root, "main.go"))
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o755), info.Mode().Perm())
}

func TestApplyPatchWithoutLineNumbers(t *testing.T) {
	root := t.TempDir()
	after := strings.Replace(patchBefore, `return "unchanged"`, `return "changed"`, 1)
	writeFile(t, filepath.Join(root, "main.go"), after, 0o644)

	// A diff as an agent's patch tool writes it: bare @@ headers.
	diff := "--- a/main.go\n+++ b/main.go\n@@\n func helper() string {\n-\treturn \"unchanged\"\n+\treturn \"changed\"\n }\n\n"
	rv, err := Reverse(state.EditRecord{Seq: 2, Path: "main.go", Operation: state.EditModify, Diff: diff})
	require.NoError(t, err)
	require.NoError(t, Apply(root, rv))
	require.Equal(t, patchBefore, readFile(t, filepath.Join(root, "main.go")))
}

// TestApplyPatchOfMidLineEdit: an Edit whose old_string began mid-line
// (its indentation left out) is reverted from its diff alone, as the edits
// feature writes it (old → new, each given a final newline).
func TestApplyPatchOfMidLineEdit(t *testing.T) {
	root := t.TempDir()
	after := strings.Replace(patchBefore, `fmt.Println("three")`, `fmt.Println("3")`, 1)
	writeFile(t, filepath.Join(root, "main.go"), after, 0o644)
	diff := "--- a/main.go\n+++ b/main.go\n@@ -1 +1 @@\n-fmt.Println(\"three\")\n+fmt.Println(\"3\")\n"
	rv, err := Reverse(state.EditRecord{Seq: 4, Path: "main.go", Operation: state.EditModify, Diff: diff})
	require.NoError(t, err)
	require.NoError(t, Apply(root, rv))
	require.Equal(t, patchBefore, readFile(t, filepath.Join(root, "main.go")))

	// Found at a line start, the text is not looked for elsewhere: "x\n"
	// at a line start and inside "ax\n" is one match, not two.
	got, err := applyHunks("ax\nx\n", []hunk{{Old: "x\n", New: "y\n"}})
	require.NoError(t, err)
	require.Equal(t, "ax\ny\n", got)
	// Off line starts only, twice: ambiguous.
	_, err = applyHunks("ax\nbx\n", []hunk{{Old: "x\n", New: "y\n"}})
	require.Error(t, err)
}

func TestApplyPatchRefusesChangedFile(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "main.go")
	after := strings.Replace(patchBefore, `"one"`, `"ONE"`, 1)
	rv, err := Reverse(state.EditRecord{Seq: 1, Path: "main.go", Operation: state.EditModify, Diff: Diff("main.go", patchBefore, after)})
	require.NoError(t, err)

	// The hunk's text is gone: someone edited the same lines since.
	changed := strings.Replace(after, `"ONE"`, `"uno"`, 1)
	writeFile(t, p, changed, 0o644)
	require.ErrorIs(t, Apply(root, rv), ErrChanged)
	require.Equal(t, changed, readFile(t, p))

	// The hunk's text is there twice: ambiguous, refused.
	twice := after + after
	writeFile(t, p, twice, 0o644)
	require.ErrorIs(t, Apply(root, rv), ErrChanged)
	require.Equal(t, twice, readFile(t, p))

	// A second hunk that does not match keeps the first from being applied.
	two := strings.Replace(after, `"tail"`, `"end"`, 1)
	rv2, err := Reverse(state.EditRecord{Seq: 1, Path: "main.go", Operation: state.EditModify, Diff: Diff("main.go", patchBefore, two)})
	require.NoError(t, err)
	writeFile(t, p, after, 0o644) // first hunk applies, second does not
	require.ErrorIs(t, Apply(root, rv2), ErrChanged)
	require.Equal(t, after, readFile(t, p))

	require.NoError(t, os.Remove(p))
	require.ErrorIs(t, Apply(root, rv), ErrChanged)
}

func TestApplyRejectsBadInput(t *testing.T) {
	root := t.TempDir()
	err := Apply(root, Revert{Path: "../outside.txt", Mode: RevertRestore, Before: strp(""), After: strp("")})
	require.Error(t, err)
	require.Contains(t, err.Error(), "leaves the workspace")

	writeFile(t, filepath.Join(root, "a.txt"), "x\n", 0o644)
	err = Apply(root, Revert{Path: "a.txt", Mode: RevertPatch, Patch: "not a diff"})
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrChanged), "a broken patch is not a changed file")
	require.Error(t, Apply(root, Revert{Path: "a.txt", Mode: "sideways"}))
	require.Error(t, Apply(root, Revert{Path: "a.txt", Mode: RevertRestore}))
	require.Equal(t, "x\n", readFile(t, filepath.Join(root, "a.txt")))
}

func TestApplyFollowsSymlink(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "real.txt"), "after\n", 0o644)
	require.NoError(t, os.Symlink("real.txt", filepath.Join(root, "link.txt")))
	rv, err := Reverse(record("link.txt", state.EditRewrite, strp("before\n"), strp("after\n")))
	require.NoError(t, err)
	require.NoError(t, Apply(root, rv))
	require.Equal(t, "before\n", readFile(t, filepath.Join(root, "real.txt")))
	fi, err := os.Lstat(filepath.Join(root, "link.txt"))
	require.NoError(t, err)
	require.Equal(t, fs.ModeSymlink, fi.Mode().Type(), "the link stays a link")
}

func TestParseHunks(t *testing.T) {
	hs, err := parseHunks("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n")
	require.NoError(t, err)
	require.Equal(t, []hunk{{Old: "a\nb", New: "a\nc"}}, hs)

	// An empty line in a counted hunk is an empty context line.
	hs, err = parseHunks("@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n")
	require.NoError(t, err)
	require.Equal(t, []hunk{{Old: "a\n\nb\n", New: "a\n\nc\n"}}, hs)

	// Counts bound a hunk: a removed line that reads "-- x" stays one.
	hs, err = parseHunks("@@ -1 +1 @@\n--- x\n+++ y\n")
	require.NoError(t, err)
	require.Equal(t, []hunk{{Old: "-- x\n", New: "++ y\n"}}, hs)

	_, err = parseHunks("@@ -1,3 +1,3 @@\n a\n")
	require.ErrorIs(t, err, errMalformed)
	_, err = parseHunks("@@\n context only\n")
	require.ErrorIs(t, err, errMalformed)
}

// FuzzParseHunks: the parser never panics, and a diff journal.Diff wrote,
// reversed and applied to the after-state, gives the before-state back
// whenever it applies (it may refuse an ambiguous hunk, never misapply).
func FuzzParseHunks(f *testing.F) {
	f.Add("one\ntwo\n", "one\n2\n", "@@ -1 +1 @@\n-a\n+b\n")
	f.Add("", "x", "@@\n a\n\\ No newline at end of file\n")
	f.Add("a\na\na\n", "a\nb\na\n", "@@ -0,0 +1,2 @@\n+x\n\n")
	f.Add(patchBefore, strings.ReplaceAll(patchBefore, "fmt", "log"), "@@ -1,99999999999 +1 @@\n\\\n")
	f.Fuzz(func(t *testing.T, before, after, raw string) {
		if hs, err := parseHunks(raw); err == nil {
			_, _ = applyHunks(after, hs)
		}
		diff := Diff("f", before, after)
		if diff == "" {
			return
		}
		hs, err := parseHunks(ReverseDiff(diff))
		if err != nil {
			t.Fatalf("journal.Diff's own diff does not parse: %v\n%s", err, diff)
		}
		got, err := applyHunks(after, hs)
		if err == nil && got != before {
			t.Fatalf("misapplied:\nbefore %q\nafter  %q\ngot    %q\ndiff\n%s", before, after, got, diff)
		}
	})
}

func TestApplyRestoreFallsBackToPatchWhenFileChangedElsewhere(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "main.go")
	after := strings.Replace(patchBefore, `"two"`, `"TWO"`, 1)
	rv, err := Reverse(record("main.go", state.EditModify, strp(patchBefore), strp(after)))
	require.NoError(t, err)
	require.Equal(t, RevertRestore, rv.Mode)

	// A later change far from the edit stays; the edit alone is undone.
	later := strings.Replace(after, `"tail"`, `"later work"`, 1)
	writeFile(t, p, later, 0o644)
	require.NoError(t, Apply(root, rv))
	require.Equal(t, strings.Replace(patchBefore, `"tail"`, `"later work"`, 1), readFile(t, p))

	// The before-content an agent's read gave lacked the final newline the
	// file has: the edit is still undone, the newline kept.
	noNL := strings.TrimSuffix(patchBefore, "\n")
	rv, err = Reverse(record("main.go", state.EditModify, strp(noNL), strp(strings.Replace(noNL, `"one"`, `"ONE"`, 1))))
	require.NoError(t, err)
	writeFile(t, p, strings.Replace(patchBefore, `"one"`, `"ONE"`, 1), 0o644)
	require.NoError(t, Apply(root, rv))
	require.Equal(t, patchBefore, readFile(t, p))

	// When the edit's own lines changed, nothing is written.
	rv, err = Reverse(record("main.go", state.EditModify, strp(patchBefore), strp(after)))
	require.NoError(t, err)
	mine := strings.Replace(after, `"TWO"`, `"two, by hand"`, 1)
	writeFile(t, p, mine, 0o644)
	require.ErrorIs(t, Apply(root, rv), ErrChanged)
	require.Equal(t, mine, readFile(t, p))
	noTempFiles(t, root)
}
