package proxy_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
	"github.com/shepherd-proxy/shepherd/test/kit/inproc"
)

// editsHarness is a real shepherd server with the edits feature and topics
// on, the memory store's edit journal given to the features as the binary
// gives it, and an emitter that records every event with the time it was
// emitted.
type editsHarness struct {
	mock    *mock.Server
	store   *state.Memory
	journal state.EditJournal
	events  *timedEvents
	URL     string
}

func newEditsHarness(t *testing.T, mo mock.Options) *editsHarness {
	t.Helper()
	m := kit.StartMock(t, mo)
	cfg := config.Defaults()
	inproc.OnMock(&cfg, m)
	cfg.Intents.Enabled = config.SwitchOff
	cfg.Recovery.Enabled = false
	require.True(t, cfg.Topics.Enabled && cfg.Edits.Enabled, "topics and edits are on by default")

	st := state.NewMemory(state.MemoryOptions{MaxSessions: 100, TTL: time.Hour})
	j, ok := any(st).(state.EditJournal)
	require.True(t, ok, "the memory store keeps an edit journal")
	ev := &timedEvents{}
	url := inproc.Start(t, &cfg, inproc.Options{Store: st, Events: ev, Closers: []func(){func() { _ = st.Close() }}})
	return &editsHarness{mock: m, store: st, journal: j, events: ev, URL: url}
}

// timedEvent is an event and when it was emitted.
type timedEvent struct {
	ev events.Event
	at time.Time
}

// timedEvents is an events.Emitter that keeps every event.
type timedEvents struct {
	mu  sync.Mutex
	evs []timedEvent
}

func (r *timedEvents) Emit(ev events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, timedEvent{ev: ev, at: time.Now()})
}

// edits returns the edit.started and edit.finished events so far.
func (r *timedEvents) edits() []timedEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []timedEvent
	for _, e := range r.evs {
		if e.ev.Type == events.EditStarted || e.ev.Type == events.EditFinished {
			out = append(out, e)
		}
	}
	return out
}

// journalOf waits until session's journal holds n entries (it is written
// after the reply reached the agent) and returns them.
func (h *editsHarness) journalOf(t *testing.T, session string, n int) []state.EditRecord {
	t.Helper()
	var tenant string
	for _, e := range h.events.edits() {
		if e.ev.Session == session {
			tenant = e.ev.Tenant
		}
	}
	require.NotEmpty(t, tenant, "an edit event of session %s names its tenant", session)
	var recs []state.EditRecord
	require.Eventually(t, func() bool {
		var err error
		recs, err = h.journal.Edits(context.Background(), state.Key{Tenant: tenant, Session: session}, "")
		return err == nil && len(recs) >= n
	}, 5*time.Second, 10*time.Millisecond, "journal of %s: %+v", session, recs)
	require.Len(t, recs, n)
	return recs
}
