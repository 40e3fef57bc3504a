package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/shepherd-proxy/shepherd/state"
)

// ErrChanged is wrapped by Apply's error when the file no longer is what
// the journal entry left: the revert would overwrite someone's later work,
// so nothing was written.
var ErrChanged = errors.New("journal: the file changed since the edit; nothing written")

// Apply executes rv in the workspace root: it is the one place that writes
// a workspace. rv.Path is used as is when absolute, joined to root when
// relative (and must then stay inside root).
//
// RevertRestore: when the file still equals *rv.After exactly (for an
// entry that deleted the file: it is absent), Before is written back, or
// the file is removed when rv.Delete. When it differs, the reverse diff
// rv.Patch is applied instead, as in RevertPatch: the edit is undone if
// its own lines are untouched, and what changed elsewhere (a later edit,
// a final newline an agent's read did not show) stays.
//
// RevertPatch: each hunk of the reverse diff rv.Patch is applied; the text
// each hunk replaces must be found in the file exactly once: at the start
// of a line or, when it is at none, anywhere (an Edit's old_string may
// begin mid-line).
//
// When the file does not match, the error wraps ErrChanged and nothing is
// written. Files are written atomically (a temporary file in the same
// directory renamed over the file), keeping the file's mode.
func Apply(root string, rv Revert) error {
	path, err := resolvePath(root, rv.Path)
	if err != nil {
		return err
	}
	cur, exists, mode, err := readCurrent(path)
	if err != nil {
		return err
	}
	var want string
	remove := false
	switch rv.Mode {
	case RevertRestore:
		if rv.After == nil || (rv.Before == nil && !rv.Delete) {
			return fmt.Errorf("journal: revert %d of %s: restore without its before and after content", rv.Seq, rv.Path)
		}
		switch {
		case rv.Operation == state.EditDelete && exists:
			return fmt.Errorf("%w: %s exists again (the edit deleted it)", ErrChanged, path)
		case rv.Operation != state.EditDelete && !exists:
			return fmt.Errorf("%w: %s no longer exists", ErrChanged, path)
		case exists && cur != *rv.After:
			// The file changed elsewhere too (a later edit, a final newline
			// the agent's read did not show): undo this edit's hunks alone,
			// if they still apply.
			if want, err = restoreByPatch(cur, rv); err != nil {
				return fmt.Errorf("%w: %s differs from the content the edit left (%w)", ErrChanged, path, err)
			}
			if err := writeAtomic(path, want, mode); err != nil {
				return fmt.Errorf("journal: revert %d: %w", rv.Seq, err)
			}
			return nil
		}
		if rv.Delete {
			remove = true
		} else {
			want = *rv.Before
		}
	case RevertPatch:
		if !exists && rv.Operation != state.EditDelete {
			return fmt.Errorf("%w: %s no longer exists", ErrChanged, path)
		}
		hunks, err := parseHunks(rv.Patch)
		if err != nil {
			return fmt.Errorf("journal: revert %d of %s: %w", rv.Seq, rv.Path, err)
		}
		if want, err = applyHunks(cur, hunks); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrChanged, path, err)
		}
		remove = want == "" && rv.Operation == state.EditCreate
	default:
		return fmt.Errorf("journal: revert %d of %s: unknown mode %q", rv.Seq, rv.Path, rv.Mode)
	}
	if remove {
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("journal: revert %d: %w", rv.Seq, err)
		}
		return nil
	}
	if err := writeAtomic(path, want, mode); err != nil {
		return fmt.Errorf("journal: revert %d: %w", rv.Seq, err)
	}
	return nil
}

// resolvePath turns the entry's path into the file to write: absolute as
// is, relative under root (never above it). A symbolic link is followed,
// so that the link stays and its target is written.
func resolvePath(root, p string) (string, error) {
	if p == "" {
		return "", errors.New("journal: revert without a path")
	}
	if !filepath.IsAbs(p) {
		if !filepath.IsLocal(p) {
			return "", fmt.Errorf("journal: relative path %q leaves the workspace", p)
		}
		abs, err := filepath.Abs(root)
		if err != nil {
			return "", fmt.Errorf("journal: workspace %q: %w", root, err)
		}
		p = filepath.Join(abs, p)
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	return filepath.Clean(p), nil
}

// readCurrent reads the file at path: its content, whether it exists and
// its mode (0644 for a file yet to create).
func readCurrent(path string) (string, bool, fs.FileMode, error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, 0o644, nil
	}
	if err != nil {
		return "", false, 0, fmt.Errorf("journal: %w", err)
	}
	if !info.Mode().IsRegular() {
		return "", false, 0, fmt.Errorf("journal: %s is not a regular file", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false, 0, fmt.Errorf("journal: %w", err)
	}
	return string(b), true, info.Mode().Perm(), nil
}

// applyHunks replaces, in content, each hunk's Old text by its New text.
// Each Old text must occur exactly once at the start of a line or, when
// at none, exactly once anywhere (and, when it does not end in a newline,
// at the end of content); hunks may not overlap. An empty Old text (a hunk that only adds, to an empty file)
// needs content to be empty.
func applyHunks(content string, hunks []hunk) (string, error) {
	type place struct {
		at int
		h  hunk
	}
	places := make([]place, 0, len(hunks))
	for i, h := range hunks {
		if h.Old == "" {
			if content != "" || len(hunks) > 1 {
				return "", fmt.Errorf("hunk %d adds to a file that is not empty", i+1)
			}
			places = append(places, place{0, h})
			continue
		}
		at, n := findText(content, h.Old, true)
		if n == 0 {
			// An Edit's old_string may begin mid-line: its diff's hunk then
			// is found only off a line start.
			at, n = findText(content, h.Old, false)
		}
		switch {
		case n == 0:
			return "", fmt.Errorf("hunk %d: its text is not in the file", i+1)
		case n > 1:
			return "", fmt.Errorf("hunk %d: its text is in the file %d times", i+1, n)
		}
		places = append(places, place{at, h})
	}
	sort.Slice(places, func(i, j int) bool { return places[i].at < places[j].at })
	var b strings.Builder
	prev := 0
	for _, p := range places {
		if p.at < prev {
			return "", errors.New("hunks overlap")
		}
		b.WriteString(content[prev:p.at])
		b.WriteString(p.h.New)
		prev = p.at + len(p.h.Old)
	}
	b.WriteString(content[prev:])
	return b.String(), nil
}

// findText returns where text first occurs in content (at the start of a
// line when lineStart), and how many times it occurs so (overlapping
// occurrences count). A text without a final newline must end content.
func findText(content, text string, lineStart bool) (first, n int) {
	first = -1
	for from := 0; from <= len(content); {
		i := strings.Index(content[from:], text)
		if i < 0 {
			break
		}
		at := from + i
		starts := !lineStart || at == 0 || content[at-1] == '\n'
		ends := strings.HasSuffix(text, "\n") || at+len(text) == len(content)
		if starts && ends {
			if n == 0 {
				first = at
			}
			n++
		}
		from = at + 1
	}
	return first, n
}

// writeAtomic writes content to path through a temporary file in the same
// directory renamed over it, with mode.
func writeAtomic(path, content string, mode fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".shepherd-*")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.WriteString(content); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	done = true
	return nil
}

// restoreByPatch undoes a restore entry's edit on a file that differs from
// its after-state: rv.Patch's hunks, applied to cur. An entry that created
// or deleted the file has no such fallback.
func restoreByPatch(cur string, rv Revert) (string, error) {
	if rv.Delete || rv.Operation == state.EditDelete || rv.Patch == "" {
		return "", errors.New("the file as a whole is what the edit wrote")
	}
	hunks, err := parseHunks(rv.Patch)
	if err != nil {
		return "", err
	}
	return applyHunks(cur, hunks)
}
