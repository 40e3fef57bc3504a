// Package journal is the logic of the edit journal shared by everything
// that reads it: the edits feature (which writes entries, with their
// diffs), the sessions API, the `shepherd edits` command and the console
// (which show entries and revert them). Entries themselves are
// state.EditRecord, kept by the state store (state.EditJournal).
//
// It is pure: it reads no files. Applying a revert to a workspace is
// Apply's job (apply.go), the one place that writes.
package journal

import (
	"errors"
	"fmt"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/shepherd-proxy/shepherd/state"
)

// Diff returns a unified diff of before → after for path ("" when they
// are equal), with the labels a/path and b/path (git's), three lines of
// context.
func Diff(path, before, after string) string {
	if before == after {
		return ""
	}
	return udiff.Unified("a/"+strings.TrimPrefix(path, "/"), "b/"+strings.TrimPrefix(path, "/"), before, after)
}

// Revert modes: how an entry is undone.
const (
	// RevertRestore writes Before back whole (after checking the file is
	// still the entry's after-state); when the entry created the file,
	// Before is empty and Delete is set: the file is removed.
	RevertRestore = "restore"
	// RevertPatch applies Patch, the reverse of the entry's diff: each hunk's
	// text must still be found in the file exactly once.
	RevertPatch = "patch"
)

// ErrNotRevertible is returned by Reverse for an entry of which neither
// the prior content nor a diff is known, or that changed nothing.
var ErrNotRevertible = errors.New("journal: the edit cannot be reverted: neither its prior content nor its diff is known")

// Revert says how to undo one journal entry. It is the answer of the
// sessions API's revert endpoint (JSON) and what Apply executes.
type Revert struct {
	Seq       int64  `json:"seq"`
	Path      string `json:"path"`
	Operation string `json:"operation"`
	// Mode is RevertRestore or RevertPatch.
	Mode string `json:"mode"`
	// Patch is the reverse unified diff (after → before): what reverting
	// changes, for a person to read or for patch(1).
	Patch string `json:"patch"`
	// Before is the content to restore (RevertRestore); Delete is set
	// instead when the entry created the file.
	Before *string `json:"before,omitempty"`
	Delete bool    `json:"delete,omitempty"`
	// After is the content the file must still have for a RevertRestore
	// (the entry's after-state; empty for an entry that deleted the file,
	// which must then be absent).
	After *string `json:"after,omitempty"`
}

// Reverse returns how to undo rec: restore the prior content when both
// the prior and the after content are known, otherwise apply the reverse
// of its diff. It is ErrNotRevertible when neither is possible.
func Reverse(rec state.EditRecord) (Revert, error) {
	rv := Revert{Seq: rec.Seq, Path: rec.Path, Operation: rec.Operation}
	if rec.BeforeKnown && rec.Before != nil && rec.After != nil {
		rv.Mode = RevertRestore
		rv.Before, rv.After = rec.Before, rec.After
		rv.Delete = rec.Operation == state.EditCreate
		if rv.Delete {
			rv.Before = nil
		}
		rv.Patch = Diff(rec.Path, *rec.After, *rec.Before)
		if rv.Patch == "" && !rv.Delete {
			return Revert{}, fmt.Errorf("%w (it changed nothing)", ErrNotRevertible)
		}
		return rv, nil
	}
	if strings.TrimSpace(rec.Diff) == "" {
		return Revert{}, ErrNotRevertible
	}
	rv.Mode = RevertPatch
	rv.Patch = ReverseDiff(rec.Diff)
	return rv, nil
}

// ReverseDiff turns a unified diff around (after → before): the ---/+++
// labels swap, each hunk header's ranges swap, and removed lines become
// added ones and the other way round, each run of changed lines listing
// its removals first, as diff(1) writes them. Context and "\ No newline"
// lines stay with the line they follow.
func ReverseDiff(diff string) string {
	lines := strings.SplitAfter(diff, "\n")
	var b strings.Builder
	b.Grow(len(diff))
	var minus, plus []string // the current run of changed lines, reversed
	flush := func() {
		for _, l := range minus {
			b.WriteString(l)
		}
		for _, l := range plus {
			b.WriteString(l)
		}
		minus, plus = minus[:0], plus[:0]
	}
	// last is the run a "\ No newline" marker belongs to.
	var last *[]string
	for i := 0; i < len(lines); i++ {
		ln := lines[i]
		switch {
		case strings.HasPrefix(ln, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			flush()
			b.WriteString("--- " + strings.TrimPrefix(lines[i+1], "+++ "))
			b.WriteString("+++ " + strings.TrimPrefix(ln, "--- "))
			i++
			last = nil
		case strings.HasPrefix(ln, "@@ "):
			flush()
			b.WriteString(reverseHunkHeader(ln))
			last = nil
		case strings.HasPrefix(ln, "-"):
			plus = append(plus, "+"+ln[1:])
			last = &plus
		case strings.HasPrefix(ln, "+"):
			minus = append(minus, "-"+ln[1:])
			last = &minus
		case strings.HasPrefix(ln, "\\") && last != nil:
			*last = append(*last, ln)
		default:
			flush()
			b.WriteString(ln)
			last = nil
		}
	}
	flush()
	return b.String()
}

// reverseHunkHeader swaps the ranges of "@@ -a,b +c,d @@ rest".
func reverseHunkHeader(ln string) string {
	body := strings.TrimPrefix(ln, "@@ ")
	end := strings.Index(body, " @@")
	if end < 0 {
		return ln
	}
	old, neu, ok := strings.Cut(body[:end], " ")
	if !ok || !strings.HasPrefix(old, "-") || !strings.HasPrefix(neu, "+") {
		return ln
	}
	return "@@ -" + neu[1:] + " +" + old[1:] + body[end:]
}
