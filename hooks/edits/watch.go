package edits

import (
	"errors"
	"strings"

	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/hooks/edits/recognize"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// maxWatchedArgs bounds the arguments a watched call keeps to measure its
// edits when it completes; beyond it, size is the arguments' length.
const maxWatchedArgs = 8 << 20

// callKey identifies a call within a turn (conv.ToolCallDelta).
type callKey struct{ stream, index int }

// watched is one edit call being watched.
type watched struct {
	id, name string
	freeform bool
	w        *recognize.Watch
	args     strings.Builder
	n        int // bytes of arguments seen
	started  []recognize.Started
	// chapter and intent are the session's when the call began (every
	// event of the call carries the same).
	chapter, intent string
}

// turnWatch watches one turn's calls. It runs on the reply's goroutine
// only (conv.CallObserver), so it needs no lock.
type turnWatch struct {
	h     *Hook
	call  *hooks.Call
	calls map[callKey]*watched
	// turn says which paths this turn's calls wrote (true) or deleted
	// (false); history is which files the request's history knows to
	// exist (existing), computed on the first whole-file write that asks
	// (nil until then).
	turn    map[string]bool
	history map[string]bool
}

// WatchCalls implements hooks.CallWatcher: the observer announces each
// call of a known edit tool as soon as a path of it is complete
// (edit.started) and when the call is complete (edit.finished, with its
// size). It does no I/O: events go to the feed's queue and the log.
func (h *Hook) WatchCalls(call *hooks.Call) conv.CallObserver {
	if call == nil || call.Side != "" {
		return nil
	}
	tw := &turnWatch{h: h, call: call, calls: map[callKey]*watched{}, turn: map[string]bool{}}
	return tw.observe
}

func (tw *turnWatch) observe(d conv.ToolCallDelta) {
	defer func() {
		if r := recover(); r != nil {
			tw.h.cfg.Log.Error("edits: watching a call panicked", zap.Any("panic", r))
		}
	}()
	k := callKey{d.Stream, d.Index}
	c, ok := tw.calls[k]
	if !ok {
		// The delta's strings may alias a reused buffer: keep copies.
		c = &watched{id: strings.Clone(d.ID), name: strings.Clone(d.Name), freeform: d.Freeform}
		c.w = tw.h.cfg.Table.Watch(d.Name, d.Freeform)
		if c.w != nil {
			c.chapter, c.intent = tw.notes()
		}
		tw.calls[k] = c
	}
	if c.w == nil {
		if d.Done {
			delete(tw.calls, k)
		}
		return
	}
	if d.Fragment != "" {
		c.n += len(d.Fragment)
		if c.args.Len()+len(d.Fragment) <= maxWatchedArgs {
			c.args.WriteString(d.Fragment)
		}
		for _, s := range c.w.Feed(d.Fragment) {
			tw.started(c, s)
		}
	}
	if d.Done {
		for _, s := range c.w.Finish() {
			tw.started(c, s)
		}
		tw.finished(c)
		delete(tw.calls, k)
	}
}

// notes are the chapter and intent of the session as the turn left it so
// far: its live view once a reply decision of the turn changed it (a
// chapter opened by a topics call shepherd answered before this
// follow-up), else the session the turn began with.
func (tw *turnWatch) notes() (chapter, intent string) {
	s := tw.call.Live
	if s == nil {
		s = tw.call.Session
	}
	return s.Note(chapterSlot), s.Note(intentSlot)
}

// started announces one path of c.
func (tw *turnWatch) started(c *watched, s recognize.Started) {
	s.Path = strings.Clone(s.Path)
	s.Op = tw.operation(s)
	c.started = append(c.started, s)
	tw.emit(events.EditStarted, c, s, -1)
}

// operation resolves OpWrite: rewrite when the file is known to exist
// (the session read or wrote it, or an earlier call of this turn wrote
// it), else create.
func (tw *turnWatch) operation(s recognize.Started) string {
	op := s.Op
	if op == recognize.OpWrite {
		op = state.EditCreate
		if tw.exists(s.Path) {
			op = state.EditRewrite
		}
	}
	tw.turn[s.Path] = op != state.EditDelete
	return op
}

// exists reports whether path is known to exist: written by this turn, or
// by the request's history (computed once, on the first write that asks).
func (tw *turnWatch) exists(path string) bool {
	if ok, seen := tw.turn[path]; seen {
		return ok
	}
	if tw.history == nil {
		tw.history = map[string]bool{}
		if tw.call.Request != nil {
			tw.history = existing(tw.h.cfg.Table, tw.call.Request.Messages)
		}
	}
	return tw.history[path]
}

// finished announces the end of c: one edit.finished per path started,
// with the size of what the call writes to it.
func (tw *turnWatch) finished(c *watched) {
	if len(c.started) == 0 {
		return
	}
	sizes := map[string]int64{}
	if c.args.Len() == c.n {
		if es, err := tw.h.cfg.Table.Edits(c.name, []byte(c.args.String()), c.freeform); err == nil || errors.Is(err, recognize.ErrPartial) {
			for _, e := range es {
				sizes[e.Path] += e.Size
			}
		}
	}
	for _, s := range c.started {
		size, ok := sizes[s.Path]
		if !ok {
			size = int64(c.n)
		}
		tw.emit(events.EditFinished, c, s, size)
	}
}

// emit sends one event (size < 0: none) and logs it when configured.
func (tw *turnWatch) emit(typ events.Type, c *watched, s recognize.Started, size int64) {
	data := map[string]any{"tool": c.name, "call_id": c.id, "path": s.Path, "operation": s.Op,
		"chapter": c.chapter, "intent": c.intent}
	if size >= 0 {
		data["size"] = size
	}
	call := tw.call
	tw.h.cfg.Events.Emit(events.Event{Type: typ, At: tw.h.cfg.Now(), Session: call.SessionID, Tenant: call.Tenant,
		Route: call.Route, RequestID: call.RequestID, Data: data})
	if !tw.h.cfg.LogEdits {
		return
	}
	fields := []zap.Field{zap.String("session", call.SessionID), zap.String("tool", c.name), zap.String("call_id", c.id),
		zap.String("path", s.Path), zap.String("operation", s.Op)}
	if c.chapter != "" {
		fields = append(fields, zap.String("chapter", c.chapter))
	}
	if size >= 0 {
		fields = append(fields, zap.Int64("size", size))
	}
	tw.h.cfg.Log.Info(string(typ), fields...)
}
