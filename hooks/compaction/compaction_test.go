package compaction

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// testHook is a hook with small limits: trigger 2,000 tokens (8,000
// characters), items of 1,000 characters within 1,500 per epoch, the 2
// newest results kept.
func testHook(rec *events.Recorder, scope hooks.OptIn) (*Hook, *metrics) {
	m := newMetrics()
	return New(Options{
		Scope: hooks.Scope{Enabled: scope}, TriggerTokens: 2000, ItemChars: 1000, TotalChars: 1500, KeepRecent: 2,
		Note: "[{kept}/{total} via {tool}]", Events: rec, Metrics: m,
		Now: func() time.Time { return time.Unix(1700000000, 0) },
	}), m
}

// bigLoop is a tool loop of n rounds, result i a distinct text of 3,000
// characters about file i.
func bigLoop(question string, n int) []conv.Message {
	msgs := []conv.Message{user(question)}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		line := fmt.Sprintf("file%d.go: func handler%d() {}\n", i, i)
		msgs = append(msgs, assistantCalls(id), results(resultBlock(id, strings.Repeat(line, 3000/len(line)+1)[:3000])))
	}
	return msgs
}

// turn runs the hook on msgs in sess and applies what it deferred, as the
// turn engine does when it saves the turn.
func turn(t *testing.T, h *Hook, sess *state.Session, msgs []conv.Message, mod ...func(*hooks.Call)) conv.RequestEdits {
	t.Helper()
	call := &hooks.Call{Session: sess, SessionID: "s1", Request: &conv.Request{Messages: msgs}}
	for _, f := range mod {
		f(call)
	}
	edits, resp, err := h.OnRequest(t.Context(), call, call.Request)
	require.NoError(t, err)
	require.Nil(t, resp)
	for _, fx := range call.TakeDeferred() {
		fx(sess)
	}
	return edits
}

func TestBelowTriggerNothing(t *testing.T) {
	rec := &events.Recorder{}
	h, _ := testHook(rec, hooks.OptInOn)
	sess := &state.Session{}
	e := turn(t, h, sess, bigLoop("q", 2))
	require.True(t, e.Empty(), "6,000 characters are under the trigger")
	require.Empty(t, rec.All())
	require.Empty(t, sess.Slots)
}

func TestEpochThenReplay(t *testing.T) {
	rec := &events.Recorder{}
	h, m := testHook(rec, hooks.OptInOn)
	sess := &state.Session{}

	// 4 results of 3,000: 12,000+ characters, past the trigger. The 2 newest
	// stay; results 0 and 1 are compacted: the question names file1's
	// handler, so it is kept (1,000), and file0 gets the rest (500).
	msgs := bigLoop("why does handler1 in file1.go fail?", 4)
	e := turn(t, h, sess, msgs)
	require.Len(t, e.ReplaceResults, 2)
	byMsg := map[int]string{}
	for _, r := range e.ReplaceResults {
		require.Zero(t, r.Block)
		byMsg[r.Msg] = r.Text
	}
	// Cuts end at line breaks, so a little less than planned is kept.
	require.InDelta(t, 1000, keptOf(t, byMsg[4]), 100, "the relevant result keeps a full item")
	require.InDelta(t, 500, keptOf(t, byMsg[2]), 100, "the other the rest of the budget")
	require.True(t, strings.HasPrefix(byMsg[4], "file1.go: func handler1() {}\n"), "the head is kept")

	st, err := Of(sess)
	require.NoError(t, err)
	require.Equal(t, 1, st.Epoch)
	require.Len(t, st.Items, 2)
	anchors := conv.Anchors(msgs)
	for _, it := range st.Items {
		require.Equal(t, 1, it.Epoch)
		require.Contains(t, []string{anchors[2], anchors[4]}, it.Anchor)
	}

	require.Len(t, rec.All(), 1)
	ev := rec.All()[0]
	require.Equal(t, events.ContextCompacted, ev.Type)
	require.Equal(t, "s1", ev.Session)
	require.Equal(t, 1, ev.Data["epoch"])
	require.Equal(t, 2, ev.Data["results"])
	require.Equal(t, keptOf(t, byMsg[2])+keptOf(t, byMsg[4]), ev.Data["kept_chars"])
	require.Equal(t, 6000-ev.Data["kept_chars"].(int), ev.Data["omitted_chars"])
	require.Greater(t, ev.Data["estimated_tokens_before"], 2000)
	require.Less(t, ev.Data["estimated_tokens_after"], ev.Data["estimated_tokens_before"])
	require.Equal(t, 1.0, counterValue(t, m.epochs))
	require.Equal(t, 2.0, counterValue(t, m.results))
	require.Equal(t, float64(ev.Data["omitted_chars"].(int)), counterValue(t, m.omitted))

	// The next request, two rounds longer: still past the trigger, and
	// results 2 and 3 are now old and compacted in epoch 2; results 0 and 1
	// are replayed byte for byte.
	next := bigLoop("why does handler1 in file1.go fail?", 6)
	e2 := turn(t, h, sess, next)
	got := map[int]string{}
	for _, r := range e2.ReplaceResults {
		got[r.Msg] = r.Text
	}
	require.Equal(t, byMsg[2], got[2], "byte-identical replay")
	require.Equal(t, byMsg[4], got[4], "byte-identical replay")
	require.Contains(t, got, 6, "epoch 2 compacts the results that aged")
	require.Contains(t, got, 8, "epoch 2 compacts the results that aged")
	require.Len(t, got, 4)
	st, _ = Of(sess)
	require.Equal(t, 2, st.Epoch)
	require.Len(t, rec.All(), 2)
	require.Equal(t, 2, rec.All()[1].Data["epoch"])

	// A request with nothing left to compact replays and starts no epoch.
	e3 := turn(t, h, sess, next)
	require.Equal(t, e2.ReplaceResults, e3.ReplaceResults)
	require.Len(t, rec.All(), 2)
}

// bigLoopSized is bigLoop with results of the sizes given.
func bigLoopSized(question string, sizes ...int) []conv.Message {
	msgs := bigLoop(question, len(sizes))
	for i, n := range sizes {
		b := &msgs[2+2*i].Blocks[0]
		b.Text = strings.Repeat("word ", n/5+1)[:n]
	}
	return msgs
}

func TestSmallSavingWaits(t *testing.T) {
	// Past the trigger (8,200 characters), but compacting the two old
	// results of 1,100 characters would save far less than a quarter of
	// the trigger: no epoch, the prefix stays as it is.
	rec := &events.Recorder{}
	h, _ := testHook(rec, hooks.OptInOn)
	sess := &state.Session{}
	msgs := bigLoopSized("q", 1100, 1100, 3000, 3000)
	require.Greater(t, estimateTokens(&conv.Request{Messages: msgs}, nil), 2000)
	e := turn(t, h, sess, msgs)
	require.True(t, e.Empty())
	require.Empty(t, rec.All())
	require.Empty(t, sess.Slots)

	// One old result of 1,050 characters could not save enough even as a
	// bare note (the check before ranking).
	e = turn(t, h, sess, bigLoopSized("q", 1050, 4000, 4000))
	require.True(t, e.Empty())
	require.Empty(t, rec.All())

	// Two rounds later the aged results are worth an epoch.
	e = turn(t, h, sess, bigLoopSized("q", 1100, 1100, 3000, 3000, 3000, 3000))
	require.Len(t, e.ReplaceResults, 4)
	require.Len(t, rec.All(), 1)
}

func TestReplayBelowTrigger(t *testing.T) {
	// Stored epochs are replayed on every request, whatever its size: the
	// model's view must not change back.
	rec := &events.Recorder{}
	h, _ := testHook(rec, hooks.OptInOn)
	sess := &state.Session{}
	msgs := bigLoop("q", 4)
	first := turn(t, h, sess, msgs)
	require.NotEmpty(t, first.ReplaceResults)

	h.cfg.TriggerTokens = 1 << 30
	again := turn(t, h, sess, msgs)
	require.Equal(t, first.ReplaceResults, again.ReplaceResults)
	require.Len(t, rec.All(), 1)
}

func TestStaleItems(t *testing.T) {
	rec := &events.Recorder{}
	h, _ := testHook(rec, hooks.OptInOn)
	sess := &state.Session{}
	turn(t, h, sess, bigLoop("q", 4))
	st, _ := Of(sess)
	require.Len(t, st.Items, 2)

	// The agent rewrote its first message: every anchor changed. Nothing
	// stored is replayed; the new epoch drops the stale items.
	rewritten := bigLoop("a different opening question", 4)
	e := turn(t, h, sess, rewritten)
	anchors := conv.Anchors(rewritten)
	st, _ = Of(sess)
	require.Equal(t, 2, st.Epoch)
	require.Len(t, st.Items, 2)
	for _, it := range st.Items {
		require.Contains(t, []string{anchors[2], anchors[4]}, it.Anchor, "only the new epoch's items remain")
	}
	require.Len(t, e.ReplaceResults, 2)

	// A stored item whose block is no longer a result is skipped.
	st.Items[0].Block = 7
	h.cfg.TriggerTokens = 1 << 30
	e = turn(t, h, sess, rewritten)
	require.Len(t, e.ReplaceResults, 1)
}

func TestNotActive(t *testing.T) {
	msgs := bigLoop("q", 6)
	for _, tc := range []struct {
		name  string
		scope hooks.OptIn
		mod   func(*hooks.Call)
		acts  bool
	}{
		{"side request", hooks.OptInOn, func(c *hooks.Call) { c.Side = "no_tools" }, false},
		{"header scope without the header", hooks.OptInHeader, func(*hooks.Call) {}, false},
		{"header scope naming another feature", hooks.OptInHeader, func(c *hooks.Call) { c.Features = []string{"format"} }, false},
		{"header scope naming compaction", hooks.OptInHeader, func(c *hooks.Call) { c.Features = []string{"format", "compaction"} }, true},
		{"on", hooks.OptInOn, func(*hooks.Call) {}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &events.Recorder{}
			h, _ := testHook(rec, tc.scope)
			sess := &state.Session{}
			e := turn(t, h, sess, msgs, tc.mod)
			require.Equal(t, tc.acts, !e.Empty())
			require.Equal(t, tc.acts, len(rec.All()) == 1)
			require.Equal(t, tc.acts, sess.Slots[Name] != nil)
		})
	}
}

func TestUnreadableSlot(t *testing.T) {
	h, _ := testHook(&events.Recorder{}, hooks.OptInOn)
	sess := &state.Session{}
	future := &state.RawSlot{V: SlotVersion + 1, Data: json.RawMessage(`{}`)}
	sess.SetSlot(Name, future)
	call := &hooks.Call{Session: sess, Request: &conv.Request{Messages: bigLoop("q", 4)}}
	_, _, err := h.OnRequest(t.Context(), call, call.Request)
	require.ErrorContains(t, err, "newer than this build reads")
	require.Empty(t, call.TakeDeferred())
	addEpoch([]Item{{Anchor: "a", Text: "x"}}, nil)(sess)
	require.Same(t, future, sess.Slots[Name], "an effect leaves a slot it cannot read as it is")
}

func TestProvision(t *testing.T) {
	var c Config
	c.SetDefaults()
	reg := prometheus.NewRegistry()
	p, err := c.Provision(hooks.Env{Metrics: reg})
	require.NoError(t, err)
	require.Nil(t, p, "off by default: nothing provisioned")

	c.Enabled, c.APIs = hooks.OptInOn, []string{"anthropic"}
	p, err = c.Provision(hooks.Env{Metrics: reg, Events: events.Nop{}})
	require.NoError(t, err)
	hk, err := p.Hook(hooks.API{Key: "anthropic"})
	require.NoError(t, err)
	require.NotNil(t, hk)
	hk, err = p.Hook(hooks.API{Key: "gemini"})
	require.NoError(t, err)
	require.Nil(t, hk)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	require.ElementsMatch(t, []string{"shepherd_compaction_epochs_total", "shepherd_compaction_results_total", "shepherd_compaction_chars_omitted_total"}, names)
}

// keptOf reads the kept count of a test note ("[970/3,000 via Read]").
func keptOf(t *testing.T, text string) int {
	t.Helper()
	m := regexp.MustCompile(`\[([0-9,]+)/`).FindStringSubmatch(text)
	require.NotNil(t, m, text)
	n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	require.NoError(t, err)
	return n
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}
