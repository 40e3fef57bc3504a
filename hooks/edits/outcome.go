package edits

import (
	"context"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/journal"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// The session slots whose notes name the chapter and the intent of an
// edit (the topics and intents features' slots; "" when they are off).
const (
	chapterSlot = "topics"
	intentSlot  = "intents"
)

// maxReason bounds the Reason of a failed entry (the first line of the
// tool's error).
const maxReason = 500

// job is one turn's journal work, done on the writer's goroutine.
type job struct {
	barrier chan struct{} // a flush marker, not work

	key             state.Key
	at              time.Time
	chapter, intent string
	// msgs is the request's history (read-only views).
	msgs []conv.Message
	// calls are the outcomes to journal: known edit tools, delivered or
	// refused, in the order the model made them.
	calls []conv.Outcome
	// failed are the newest tool results that came back as errors for
	// calls of known edit tools.
	failed []failure
}

type failure struct{ callID, tool, reason string }

// OnOutcome implements hooks.OutcomeHook: it queues the turn's journal
// work (delivered calls journalled as applied, refused ones as refused,
// and the request's failed edit results marked failed) and returns at
// once. A full queue drops the turn's work and counts it.
//
// The work is keyed by the session as the turn saved it (Call.Saved) when
// it was saved: an opening request of an agent that sends no session id
// is saved under the fingerprint of its continuation, the id every later
// turn of the conversation carries, not under the request's own fresh id.
func (h *Hook) OnOutcome(_ context.Context, call *hooks.Call, out *conv.TurnOutcome) error {
	if call == nil || out == nil || call.Side != "" {
		return nil
	}
	j := &job{key: journalKey(call), at: h.cfg.Now()}
	for _, o := range out.Calls {
		if (o.Fate == conv.FateDelivered || o.Fate == conv.FateRefused) && writes(h.cfg.Table, o.Call.Name) {
			j.calls = append(j.calls, o)
		}
	}
	if call.Request != nil {
		j.msgs = call.Request.Messages
		j.failed = h.failures(j.msgs)
	}
	if len(j.calls) == 0 && (len(j.failed) == 0 || h.cfg.Journal == nil) {
		return nil
	}
	sess := call.Saved
	if sess == nil {
		sess = call.Session
	}
	j.chapter, j.intent = sess.Note(chapterSlot), sess.Note(intentSlot)
	if !h.writer.add(j) {
		h.cfg.Metrics.drop()
		h.cfg.Log.Warn("edits: journal queue full; this turn's edits are not journalled",
			zap.String("session", j.key.Session))
	}
	return nil
}

// journalKey is the key of the session a turn's journal work belongs to:
// the one it was saved under, else the request's.
func journalKey(call *hooks.Call) state.Key {
	if s := call.Saved; s != nil && s.ID != "" {
		return state.Key{Tenant: s.Tenant, Session: s.ID}
	}
	return state.Key{Tenant: call.Tenant, Session: call.SessionID}
}

// failures lists the error results of known edit tools among the newest
// tool results of msgs (those after the last assistant message).
func (h *Hook) failures(msgs []conv.Message) []failure {
	var out []failure
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role != conv.RoleAssistant; i-- {
		for _, b := range msgs[i].Blocks {
			if b.Kind != conv.BlockToolResult || b.ToolCallID == "" || !writes(h.cfg.Table, b.ToolName) {
				continue
			}
			if text, isErr := resultText(&b); isErr {
				out = append(out, failure{callID: b.ToolCallID, tool: b.ToolName, reason: firstLine(text)})
			}
		}
	}
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	s, _, _ = strings.Cut(s, "\n")
	s = strings.TrimSpace(s)
	if len(s) > maxReason {
		s = s[:maxReason]
	}
	return s
}

// run does one job: failed marks first (they concern earlier turns), then
// the turn's entries. Every store call has its own timeout; errors are
// counted and logged, never returned.
func (h *Hook) run(j *job) {
	defer func() {
		if r := recover(); r != nil {
			h.cfg.Metrics.journalError()
			h.cfg.Log.Error("edits: journal job panicked", zap.Any("panic", r), zap.String("session", j.key.Session))
		}
	}()
	jr := h.cfg.Journal
	if jr != nil && j.key.Valid() {
		for _, f := range j.failed {
			ctx, cancel := context.WithTimeout(context.Background(), h.cfg.WriteTimeout)
			n, err := jr.SetEditStatus(ctx, j.key, f.callID, state.EditFailed, f.reason)
			cancel()
			if err != nil {
				h.journalError("marking an edit failed", j.key, err)
				continue
			}
			h.cfg.Metrics.edit(f.tool, "", state.EditFailed, n)
		}
	}
	if len(j.calls) == 0 {
		return
	}
	recs := h.records(j)
	if len(recs) == 0 {
		return
	}
	if jr != nil && j.key.Valid() {
		ctx, cancel := context.WithTimeout(context.Background(), h.cfg.WriteTimeout)
		_, err := jr.AppendEdits(ctx, j.key, h.cfg.JournalSize, recs)
		cancel()
		if err != nil {
			h.journalError("appending edits", j.key, err)
			return
		}
	}
	for _, r := range recs {
		h.cfg.Metrics.edit(r.Tool, r.Operation, r.Status, 1)
	}
}

func (h *Hook) journalError(what string, key state.Key, err error) {
	h.cfg.Metrics.journalError()
	h.cfg.Log.Warn("edits: "+what+" failed; the journal misses it", zap.String("session", key.Session), zap.Error(err))
}

// records builds the turn's entries: the history replayed, then each
// call's edits in order (a delivered call's effect is seen by the next;
// a refused one changes nothing).
func (h *Hook) records(j *job) []state.EditRecord {
	fs := history(h.cfg.Table, j.msgs)
	looked := map[string]bool{}
	var recs []state.EditRecord
	for _, o := range j.calls {
		es, err := callEdits(h.cfg.Table, o.Call.Name, o.Call.Args, o.Call.Freeform)
		if err != nil {
			h.cfg.Log.Debug("edits: call not understood; not journalled", zap.String("tool", o.Call.Name),
				zap.String("call_id", o.Call.ID), zap.Error(err))
			continue
		}
		for _, e := range es {
			if e.Path == "" {
				continue
			}
			if _, seen := fs[e.Path]; !seen && !looked[e.Path] {
				looked[e.Path] = true
				h.fromJournal(j.key, fs, e.Path)
			}
			var a applied
			if o.Fate == conv.FateRefused {
				a = fs.try(e)
			} else {
				a = fs.apply(e)
			}
			recs = append(recs, h.record(j, o, a))
		}
	}
	return recs
}

// fromJournal sets what the journal's newest applied entry of path says
// of it (its after-state), when the history never showed the path.
func (h *Hook) fromJournal(key state.Key, fs files, path string) {
	if h.cfg.Journal == nil || !key.Valid() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.WriteTimeout)
	recs, err := h.cfg.Journal.Edits(ctx, key, path)
	cancel()
	if err != nil {
		h.journalError("reading the journal", key, err)
		return
	}
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.Status != state.EditApplied {
			continue
		}
		if r.Operation == state.EditDelete {
			fs[path] = file{content: ptr("")}
		} else {
			fs[path] = file{exists: true, content: r.After}
		}
		return
	}
}

// record is the journal entry of one applied (or refused) edit.
func (h *Hook) record(j *job, o conv.Outcome, a applied) state.EditRecord {
	e := a.edit
	r := state.EditRecord{
		At: j.at, Path: e.Path, Tool: o.Call.Name, CallID: o.Call.ID, Operation: a.op,
		Status: state.EditApplied, Chapter: j.chapter, Intent: j.intent, Size: e.Size,
	}
	if o.Fate == conv.FateRefused {
		r.Status, r.Reason = state.EditRefused, o.Result
	}
	before, after := h.keep(a.before.content), h.keep(a.after.content)
	if before != nil {
		r.Before, r.BeforeKnown = before, true
	}
	r.After = after
	if before != nil && after != nil {
		r.Diff = journal.Diff(e.Path, *before, *after)
	} else {
		r.Diff = e.CallDiff()
	}
	return r
}

// keep returns s when it is small enough to journal, else nil.
func (h *Hook) keep(s *string) *string {
	if s == nil || len(*s) > h.cfg.MaxContentBytes {
		return nil
	}
	return ptr(*s)
}
