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
}

// turnWatch watches one turn's calls. It runs on the reply's goroutine
// only (conv.CallObserver), so it needs no lock.
type turnWatch struct {
	h               *Hook
	call            *hooks.Call
	chapter, intent string
	calls           map[callKey]*watched
	// existing are the paths known to exist, computed on the first write
	// whose operation depends on it; nil until then.
	existing map[string]bool
}

// WatchCalls implements hooks.CallWatcher: the observer announces each
// call of a known edit tool as soon as a path of it is complete
// (edit.started) and when the call is complete (edit.finished, with its
// size). It does no I/O: events go to the feed's queue and the log.
func (h *Hook) WatchCalls(call *hooks.Call) conv.CallObserver {
	if call == nil || call.Side != "" {
		return nil
	}
	tw := &turnWatch{h: h, call: call, calls: map[callKey]*watched{},
		chapter: call.Session.Note(chapterSlot), intent: call.Session.Note(intentSlot)}
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
		c = &watched{id: d.ID, name: d.Name, freeform: d.Freeform}
		c.w = tw.h.cfg.Table.Watch(d.Name, d.Freeform)
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

// started announces one path of c.
func (tw *turnWatch) started(c *watched, s recognize.Started) {
	s.Op = tw.operation(s)
	c.started = append(c.started, s)
	tw.emit(events.EditStarted, c, s, -1)
}

// operation resolves OpWrite: rewrite when the file is known to exist
// (the session read or wrote it, or an earlier call of this turn wrote
// it), else create.
func (tw *turnWatch) operation(s recognize.Started) string {
	switch s.Op {
	case recognize.OpWrite:
		if tw.exists(s.Path) {
			return state.EditRewrite
		}
		return state.EditCreate
	case recognize.OpDelete:
		tw.note(s.Path, false)
	default:
		tw.note(s.Path, true)
	}
	return s.Op
}

func (tw *turnWatch) exists(path string) bool {
	if tw.existing == nil {
		tw.existing = map[string]bool{}
		if tw.call.Request != nil {
			for p, f := range history(tw.h.cfg.Table, tw.call.Request.Messages) {
				tw.existing[p] = f.exists
			}
		}
	}
	ok := tw.existing[path]
	tw.existing[path] = true
	return ok
}

func (tw *turnWatch) note(path string, exists bool) {
	if tw.existing != nil {
		tw.existing[path] = exists
	}
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
		"chapter": tw.chapter, "intent": tw.intent}
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
	if tw.chapter != "" {
		fields = append(fields, zap.String("chapter", tw.chapter))
	}
	if size >= 0 {
		fields = append(fields, zap.Int64("size", size))
	}
	tw.h.cfg.Log.Info(string(typ), fields...)
}
