package feed

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/state"
)

func ev(session string, seq int) events.Event {
	return events.Event{Type: events.CallAllowed, At: time.Unix(1700000000, 0).UTC(), Session: session, Tenant: "t1",
		Data: map[string]any{"seq": seq}}
}

func seqOf(t *testing.T, data []byte) int {
	t.Helper()
	var e struct {
		Data struct {
			Seq int `json:"seq"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(data, &e))
	return e.Data.Seq
}

// A store that hangs never slows Emit: the queue keeps the newest events,
// drops the oldest and counts each drop.
func TestEmitNeverBlocksAndDropsOldest(t *testing.T) {
	log := newFakeLog()
	log.gate = make(chan struct{})
	reg := prometheus.NewRegistry()
	p, err := New(Options{Log: log, Queue: 16, Metrics: reg})
	require.NoError(t, err)

	const n = 10000
	start := time.Now()
	for i := range n {
		p.Emit(ev("s1", i))
	}
	elapsed := time.Since(start)
	require.Less(t, elapsed, time.Second, "Emit must not wait for the store")

	close(log.gate) // the store answers again
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, p.Close(ctx))

	recs := log.all()
	// At most one batch was taken before the store hung (<= 16 events);
	// then the queue held the newest 16.
	require.LessOrEqual(t, len(recs), 32)
	require.GreaterOrEqual(t, len(recs), 16)
	tail := recs[len(recs)-16:]
	for i, r := range tail {
		require.Equal(t, n-16+i, seqOf(t, r.Data), "the queue keeps the newest events, in order")
	}
	dropped := value(p.dropped.WithLabelValues(DropQueueFull))
	require.Equal(t, float64(n-len(recs)), dropped, "every event not appended was counted as dropped")
	require.Equal(t, float64(len(recs)), value(p.published))
	// Registered on the given registry.
	mfs, err := reg.Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	require.True(t, names["shepherd_events_dropped_total"])
	require.True(t, names["shepherd_events_published_total"])
}

// Close appends everything still queued, in order, one append per session
// per batch, and later events are dropped and counted.
func TestCloseFlushes(t *testing.T) {
	log := newFakeLog()
	log.gate = make(chan struct{})
	p, err := New(Options{Log: log, Queue: 100})
	require.NoError(t, err)
	p.Emit(ev("s1", 0)) // taken by the loop, which hangs in the store
	require.Eventually(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.n == 0 }, time.Second, time.Millisecond)
	for i := 1; i <= 6; i++ {
		p.Emit(ev([]string{"s1", "s2"}[i%2], i))
	}
	p.Emit(events.Event{Type: events.CallAllowed, Tenant: "t1"}) // no session: dropped
	close(log.gate)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, p.Close(ctx))
	p.Emit(ev("s1", 99))

	recs := log.all()
	require.Len(t, recs, 7)
	var s1, s2 []int
	for _, r := range log.sessions[(key("s1"))] {
		s1 = append(s1, seqOf(t, r.Data))
	}
	for _, r := range log.sessions[(key("s2"))] {
		s2 = append(s2, seqOf(t, r.Data))
	}
	require.Equal(t, []int{0, 2, 4, 6}, s1)
	require.Equal(t, []int{1, 3, 5}, s2)
	// The second batch: one append per session, s2 first (its first event
	// came first).
	require.Equal(t, []appendCall{{(key("s1")), 1}, {(key("s2")), 3}, {(key("s1")), 3}}, log.appends)
	require.Equal(t, 1.0, value(p.dropped.WithLabelValues(DropNoSession)))
	require.Equal(t, 1.0, value(p.dropped.WithLabelValues(DropClosed)))
	// The record is the event's JSON without an id.
	var got map[string]any
	require.NoError(t, json.Unmarshal(recs[0].Data, &got))
	require.NotContains(t, got, "id")
	require.Equal(t, "call.allowed", got["type"])
	require.Equal(t, "s1", got["session"])
	require.NoError(t, p.Close(ctx), "Close is idempotent")
}

// Close gives up at its deadline when the store hangs.
func TestCloseDeadline(t *testing.T) {
	log := newFakeLog()
	log.gate = make(chan struct{})
	defer close(log.gate)
	p, err := New(Options{Log: log, AppendTimeout: time.Minute})
	require.NoError(t, err)
	p.Emit(ev("s1", 0))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	require.ErrorIs(t, p.Close(ctx), context.DeadlineExceeded)
	require.Less(t, time.Since(start), time.Second)
}

// A failed append loses its batch, counted, and the publisher goes on.
func TestAppendFailureCounted(t *testing.T) {
	log := newFakeLog()
	log.fail = errors.New("store down")
	p, err := New(Options{Log: log})
	require.NoError(t, err)
	p.Emit(ev("s1", 0))
	p.Emit(ev("s1", 1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	require.NoError(t, p.Close(ctx))
	require.Equal(t, 2.0, value(p.dropped.WithLabelValues(DropAppendFailed)))
}

func key(session string) state.Key { return state.Key{Tenant: "t1", Session: session} }

// value reads a counter.
func value(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// BenchmarkEmit measures what the request path pays per event, with the
// publisher writing to a log that answers at once.
func BenchmarkEmit(b *testing.B) {
	p, err := New(Options{Log: newFakeLogDiscard()})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(context.Background())
	e := ev("s1", 1)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p.Emit(e)
		}
	})
}
