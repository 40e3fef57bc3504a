package turn

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/anthropic"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// askHook holds every call named "rm" (an ask rule).
type askHook struct{}

func (askHook) Name() string { return "asker" }
func (askHook) OnReply(_ context.Context, _ *hooks.Call, r *conv.Reply) (hooks.ReplyDecision, error) {
	var d hooks.ReplyDecision
	for _, c := range r.ToolCalls {
		if c.Name == "rm" {
			d.Calls = append(d.Calls, conv.CallDecision{CallIndex: c.Index, Verdict: conv.Hold, Result: "rm needs approval", Rule: "ask_tools"})
		}
	}
	return d, nil
}

type holdFixture struct {
	e    *Engine
	apps state.Approvals
	evs  *events.Recorder
	out  *outcomeHook
}

// newHoldFixture builds an engine over a memory store; withApprovals
// false leaves the engine without approvals.
func newHoldFixture(t *testing.T, withApprovals bool, holds Holds) *holdFixture {
	t.Helper()
	f := &holdFixture{evs: &events.Recorder{}, out: &outcomeHook{}}
	store := state.NewMemory(state.MemoryOptions{MaxSessions: 10, TTL: time.Hour})
	t.Cleanup(func() { _ = store.Close() })
	var apps state.Approvals
	if withApprovals {
		apps = store
	}
	f.apps = apps
	f.e = New(Options{
		Store: store, Metrics: &countingMetrics{},
		Limits: Limits{MaxFollowups: 4, MaxRefusalRounds: 4}, SessionFor: func(fp string) string { return "fp-" + fp },
		Approvals: apps, Holds: holds, Events: f.evs,
	})
	return f
}

// run runs one turn whose first reply is first; w may be preset (gone).
func (f *holdFixture) run(t *testing.T, w *scriptWriter, first string, more ...string) (*scriptSender, error) {
	t.Helper()
	codec := anthropic.Descriptor.Codec()
	view, err := codec.ParseRequest([]byte(agentRequest))
	require.NoError(t, err)
	cc, _ := rewrite.Continuer(codec)
	tn, st := f.e.Begin(context.Background(), Request{
		Call:  hooks.Call{Route: "messages", Tenant: "t", SessionID: "s1"},
		Chain: hooks.NewChain(askHook{}, f.out), Codec: codec, TurnCodec: codec, Continuer: cc,
		View: view, Body: []byte(agentRequest),
	})
	require.NotNil(t, tn)
	require.Nil(t, st.Short)
	w.replies = [][]byte{[]byte(first)}
	up := &scriptSender{replies: more}
	return up, tn.Run(context.Background(), w, up)
}

// decideWhenHeld waits for one pending approval and decides it.
func decideWhenHeld(t *testing.T, apps state.Approvals, decision, note string) <-chan state.Approval {
	ch := make(chan state.Approval, 1)
	go func() {
		defer close(ch)
		for range 500 {
			list, _ := apps.PendingApprovals(context.Background(), "", 0)
			if len(list) > 0 {
				a, err := apps.DecideApproval(context.Background(), state.Key{Tenant: list[0].Tenant, Session: list[0].Session}, list[0].ID, decision, "api", note)
				if err == nil {
					ch <- a
				}
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return ch
}

var fastHolds = Holds{Timeout: 5 * time.Second, Poll: 5 * time.Millisecond, KeepAlive: 10 * time.Millisecond}

// Approved: the held call reaches the agent; the approval names the exact
// call; events say held then approved.
func TestHoldApproved(t *testing.T) {
	f := newHoldFixture(t, true, fastHolds)
	decided := decideWhenHeld(t, f.apps, state.ApprovalApproved, "")
	w := &scriptWriter{}
	up, err := f.run(t, w, reply("tool_use", "removing", "rm", "ls"))
	require.NoError(t, err)
	a := <-decided
	require.Equal(t, ApprovalID("s1", "toolu_rm_0", "rm", []byte(`{}`)), a.ID)
	require.Equal(t, "rm needs approval", a.Reason)
	require.Equal(t, "ask_tools", a.Rule)
	require.Empty(t, up.sent, "nothing answered by shepherd: no follow-up")
	require.Equal(t, [][]int{nil}, w.released, "both calls reach the agent")
	require.Equal(t, []string{"0:rm:delivered", "0:ls:delivered"}, fates(f.out.got[0]))
	held := f.evs.Of(events.CallHeld)
	require.Len(t, held, 1)
	require.Equal(t, a.ID, held[0].Data["approval"])
	require.Equal(t, "toolu_rm_0", held[0].Data["call_id"])
	require.Equal(t, "s1", held[0].Session)
	ap := f.evs.Of(events.CallApproved)
	require.Len(t, ap, 1)
	require.Equal(t, "api", ap[0].Data["by"])
}

// Denied with a note: the call is refused, the model gets the refusal and
// the note in the follow-up; the agent never sees the call.
func TestHoldDenied(t *testing.T) {
	f := newHoldFixture(t, true, fastHolds)
	decideWhenHeld(t, f.apps, state.ApprovalDenied, "use git clean instead")
	w := &scriptWriter{}
	up, err := f.run(t, w, reply("tool_use", "removing", "rm"), reply("end_turn", "ok"))
	require.NoError(t, err)
	require.Len(t, up.sent, 1, "the refusal goes back to the model")
	require.Contains(t, up.sent[0], ReasonDenied)
	require.Contains(t, up.sent[0], "use git clean instead")
	require.Equal(t, []int{0}, w.released[0], "the agent never sees the call")
	require.Equal(t, "0:rm:refused", fates(f.out.got[0])[0])
	ref := f.evs.Of(events.CallRefused)
	require.Len(t, ref, 1)
	require.Equal(t, "ask_tools", ref[0].Data["rule"], "the refusal names the rule behind it")
	require.Contains(t, ref[0].Data["reason"], "use git clean instead")
	require.Len(t, f.evs.Of(events.CallDenied), 1)
}

// Expired: no decision in time; the call is refused "not approved in
// time" and the denial is by timeout.
func TestHoldExpired(t *testing.T) {
	f := newHoldFixture(t, true, Holds{Timeout: 200 * time.Millisecond, Poll: 10 * time.Millisecond, KeepAlive: 10 * time.Millisecond})
	w := &scriptWriter{}
	start := time.Now()
	up, err := f.run(t, w, reply("tool_use", "removing", "rm"), reply("end_turn", "ok"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 180*time.Millisecond, "held until (just before) the expiry")
	require.Len(t, up.sent, 1)
	require.Contains(t, up.sent[0], ReasonNotApproved)
	require.Positive(t, w.keepAlives, "the connection was kept alive while waiting")
	den := f.evs.Of(events.CallDenied)
	require.Len(t, den, 1)
	require.Equal(t, ByTimeout, den[0].Data["by"])
	// The store records who ended it, however late the holder's timer
	// fired.
	a, err := f.apps.GetApproval(context.Background(), state.Key{Tenant: "t", Session: "s1"}, ApprovalID("s1", "toolu_rm_0", "rm", []byte(`{}`)))
	require.NoError(t, err)
	require.Equal(t, state.ApprovalDenied, a.Decision)
	require.Equal(t, ByTimeout, a.By)
}

// No approvals store: the call is refused at once, saying why.
func TestHoldWithoutStore(t *testing.T) {
	f := newHoldFixture(t, false, fastHolds)
	up, err := f.run(t, &scriptWriter{}, reply("tool_use", "removing", "rm"), reply("end_turn", "ok"))
	require.NoError(t, err)
	require.Len(t, up.sent, 1)
	require.Contains(t, up.sent[0], "keeps no approvals")
}

// The agent leaves while the call is held: the turn ends with
// ErrClientGone, the approval stays pending (for a retry to adopt),
// nothing keeps running.
func TestHoldClientGone(t *testing.T) {
	f := newHoldFixture(t, true, fastHolds)
	before := runtime.NumGoroutine()
	w := &scriptWriter{gone: true}
	up, err := f.run(t, w, reply("tool_use", "removing", "rm"), reply("end_turn", "ok"))
	require.True(t, errors.Is(err, ErrClientGone), "%v", err)
	require.Empty(t, up.sent)
	require.Nil(t, w.final)
	a, err := f.apps.GetApproval(context.Background(), state.Key{Tenant: "t", Session: "s1"}, ApprovalID("s1", "toolu_rm_0", "rm", []byte(`{}`)))
	require.NoError(t, err)
	require.Equal(t, state.ApprovalPending, a.Decision, "no one denied it")
	require.Empty(t, f.evs.Of(events.CallDenied))
	// Polled by hand: require.Eventually runs its condition on goroutines
	// of its own.
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before, "no goroutine left behind: %s", dumpGoroutines())
}

func dumpGoroutines() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// The agent drops a held request and resends it (Claude Code does past its
// idle limit); the model makes the same call again: the retry waits on the
// approval already pending (no second call.held, the same expiry), and a
// person's decision on it releases the retry's call.
func TestHoldRetryAdoptsPendingApproval(t *testing.T) {
	f := newHoldFixture(t, true, fastHolds)
	_, err := f.run(t, &scriptWriter{gone: true}, reply("tool_use", "removing", "rm"))
	require.True(t, errors.Is(err, ErrClientGone), "%v", err)
	key := state.Key{Tenant: "t", Session: "s1"}
	id := ApprovalID("s1", "toolu_rm_0", "rm", []byte(`{}`))
	first, err := f.apps.GetApproval(context.Background(), key, id)
	require.NoError(t, err)

	// The person approves once the retry waits (its call.held).
	decided := make(chan state.Approval, 1)
	go func() {
		defer close(decided)
		for range 1000 {
			if len(f.evs.Of(events.CallHeld)) == 2 {
				a, err := f.apps.DecideApproval(context.Background(), key, id, state.ApprovalApproved, "api", "")
				if err == nil {
					decided <- a
				}
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	w := &scriptWriter{}
	up, err := f.run(t, w, reply("tool_use", "removing", "rm"))
	require.NoError(t, err)
	a := <-decided
	require.Equal(t, id, a.ID)
	require.Equal(t, first.ExpiresAt, a.ExpiresAt, "the retry kept the first hold's expiry")
	require.Empty(t, up.sent)
	require.Equal(t, "0:rm:delivered", fates(f.out.got[len(f.out.got)-1])[0])
	held := f.evs.Of(events.CallHeld)
	require.Len(t, held, 2, "held, then held again by the retry")
	require.Nil(t, held[0].Data["retry"])
	require.Equal(t, true, held[1].Data["retry"])
	require.Len(t, f.evs.Of(events.CallApproved), 1)
}

// A call a person already decided (while the agent's earlier copy of the
// request was held) is decided at once when the retry makes it again.
func TestHoldRetryAppliesDecision(t *testing.T) {
	f := newHoldFixture(t, true, fastHolds)
	_, err := f.run(t, &scriptWriter{gone: true}, reply("tool_use", "removing", "rm"))
	require.True(t, errors.Is(err, ErrClientGone), "%v", err)
	key := state.Key{Tenant: "t", Session: "s1"}
	_, err = f.apps.DecideApproval(context.Background(), key, ApprovalID("s1", "toolu_rm_0", "rm", []byte(`{}`)), state.ApprovalDenied, "console", "not now")
	require.NoError(t, err)

	w := &scriptWriter{}
	up, err := f.run(t, w, reply("tool_use", "removing", "rm"), reply("end_turn", "ok"))
	require.NoError(t, err)
	require.Len(t, up.sent, 1)
	require.Contains(t, up.sent[0], ReasonDenied)
	require.Contains(t, up.sent[0], "not now")
	require.Zero(t, w.keepAlives, "nothing to wait for")
}
