package state

import (
	"context"
	"time"
)

// Edit statuses: what became of a journalled file edit.
const (
	// EditApplied: the call reached the agent and no error came back for
	// it (yet: a later request may still mark it failed).
	EditApplied = "applied"
	// EditRefused: policy refused the call; the agent never ran it.
	EditRefused = "refused"
	// EditFailed: the agent ran the call and its tool result came back as
	// an error.
	EditFailed = "failed"
)

// Edit operations.
const (
	EditCreate  = "create"  // a new file
	EditRewrite = "rewrite" // an existing file written whole
	EditModify  = "modify"  // part of an existing file changed
	EditDelete  = "delete"  // a file removed
)

// EditRecord is one entry of a session's edit journal: one file a tool
// call asked to write, as the model asked it. Before and After hold the
// file's whole content when it is known (nil otherwise); Diff is a unified
// diff of the change when it can be told (from Before and After, or from
// the call itself: an Edit's old and new strings, a patch's hunks).
type EditRecord struct {
	// Seq numbers the session's entries from 1, in the order they were
	// journalled; it never repeats within a session (the {n} of the edits
	// API).
	Seq  int64     `json:"seq"`
	At   time.Time `json:"at"`
	Path string    `json:"path"`
	// Tool and CallID name the call; Operation is EditCreate, EditRewrite,
	// EditModify or EditDelete.
	Tool      string `json:"tool"`
	CallID    string `json:"call_id,omitempty"`
	Operation string `json:"operation"`
	// Status is EditApplied, EditRefused or EditFailed; Reason says why a
	// call was refused or failed (the refusal text, the tool's error).
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Chapter and Intent are the session's topic chapter and intent when
	// the call was made ("" when the feature is off).
	Chapter string `json:"chapter,omitempty"`
	Intent  string `json:"intent,omitempty"`
	// Diff is a unified diff (before → after), "" when unknown.
	Diff string `json:"diff,omitempty"`
	// Before and After are the whole file before and after the edit, nil
	// when unknown (BeforeKnown false: the session never saw the file, or
	// it was too large to keep). A created file's Before is known and
	// empty; a deleted file's After is known and empty.
	Before      *string `json:"before,omitempty"`
	After       *string `json:"after,omitempty"`
	BeforeKnown bool    `json:"before_known"`
	// Size is the byte size of what the call wrote (the content or patch
	// argument).
	Size int64 `json:"size"`
}

// EditJournal keeps each session's journal of file edits: per path, the
// newest entries. Both Memory and Redis implement it; entries are written
// and read by any replica.
//
// Contract, for every implementation:
//   - AppendEdits stores recs in order, giving each the session's next Seq
//     (the Seq the caller set is ignored) and returns them as stored. Per
//     path only the newest keep (>= 1) entries are kept; older ones of that
//     path are dropped. A session keeps at most 1000 entries over all its
//     paths; the oldest go first.
//   - SetEditStatus changes Status and Reason of the entries of a call id
//     (one call may write several paths); an unknown call id is no error
//     and changes nothing. It reports how many entries changed.
//   - Edits returns the session's entries, oldest first (by Seq); only
//     those of path when path is not "". An unknown session has none (no
//     error).
//   - Edit returns the entry seq, or ErrNotFound when it was never
//     stored or was dropped.
//   - The journal expires with the session (the store's TTL since its last
//     append) and is deleted with it (Store.Delete).
//   - The key must be Valid: AppendEdits and SetEditStatus return
//     ErrInvalidKey, Edits and Edit ErrNotFound (wrapping ErrInvalidKey).
type EditJournal interface {
	AppendEdits(ctx context.Context, key Key, keep int, recs []EditRecord) ([]EditRecord, error)
	SetEditStatus(ctx context.Context, key Key, callID, status, reason string) (int, error)
	Edits(ctx context.Context, key Key, path string) ([]EditRecord, error)
	Edit(ctx context.Context, key Key, seq int64) (EditRecord, error)
}
