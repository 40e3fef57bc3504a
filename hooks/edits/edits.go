// Package edits is the file-edits feature (docs/edits.md): it announces
// file-writing tool calls while they stream (events edit.started and
// edit.finished, logged too) and keeps each session's edit journal (per
// path, the newest entries, with diffs and the content before and after
// when known) in the state store's state.EditJournal.
//
// It only observes: it never changes a request or a reply, owns no tool
// and fails open everywhere (an edit it cannot read is left out, a
// journal write that fails is counted and logged).
package edits

import (
	"time"

	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/hooks/edits/recognize"
	"github.com/shepherd-proxy/shepherd/state"
)

// Options configure the hook (Config.Provision builds them from the
// configuration section). Zero fields take the defaults.
type Options struct {
	// Table recognises file-writing and file-reading tools; default the
	// built-in rules.
	Table *recognize.Table
	// Journal keeps the entries; nil keeps none (events still work).
	Journal state.EditJournal
	// JournalSize is the entries kept per session and path (default 10);
	// MaxContentBytes the largest before/after content kept (0 keeps
	// none; negative: the default).
	JournalSize     int
	MaxContentBytes int
	// Events is the live feed (nil: none); Log the logger (nil: none).
	// LogEdits logs edit.started and edit.finished at info.
	Events   events.Emitter
	Log      *zap.Logger
	LogEdits bool
	// Now is the clock of events and entries (tests); default time.Now.
	Now func() time.Time
	// Queue is the journal writer's queue length in turns (default 256);
	// WriteTimeout bounds each store call (default 2s).
	Queue        int
	WriteTimeout time.Duration
	// Metrics, when set, counts edits and journal errors.
	Metrics *metrics
}

// Hook is the edits feature. It is a CallWatcher (edits announced while a
// reply streams) and an OutcomeHook (the journal, written on a background
// queue after the reply reached the agent). It is safe for concurrent
// use; Close stops its writer.
type Hook struct {
	cfg    Options
	writer *writer
}

var (
	_ hooks.CallWatcher = (*Hook)(nil)
	_ hooks.OutcomeHook = (*Hook)(nil)
)

// New builds the hook and starts its journal writer.
func New(o Options) *Hook {
	if o.Table == nil {
		o.Table = recognize.NewTable(recognize.Builtin())
	}
	if o.JournalSize <= 0 {
		o.JournalSize = DefaultJournalSize
	}
	if o.MaxContentBytes < 0 {
		o.MaxContentBytes = DefaultMaxContentBytes
	}
	if o.Events == nil {
		o.Events = events.Nop{}
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Queue <= 0 {
		o.Queue = 256
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 2 * time.Second
	}
	h := &Hook{cfg: o}
	h.writer = newWriter(o.Queue, h.run)
	return h
}

// Name implements hooks.Hook.
func (h *Hook) Name() string { return Name }

// Close flushes the journal writer's queue (waiting at most a few
// seconds) and stops it. It is idempotent.
func (h *Hook) Close() error {
	h.writer.close(5 * time.Second)
	return nil
}

// Flush waits until every job queued so far was written (tests, and
// callers that read the journal right after a turn).
func (h *Hook) Flush() { h.writer.flush() }
