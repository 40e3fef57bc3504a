package turn

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/anthropic"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// countingMetrics records what the engine reports.
type countingMetrics struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *countingMetrics) add(k string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = map[string]int{}
	}
	m.n[k] += n
}
func (m *countingMetrics) get(k string) int { m.mu.Lock(); defer m.mu.Unlock(); return m.n[k] }

func (m *countingMetrics) StoreError(op string)   { m.add("store_error_"+op, 1) }
func (m *countingMetrics) HookFailed(hook string) { m.add("hook_failed_"+hook, 1) }
func (m *countingMetrics) LedgerReplayed(a, mi, u int) {
	m.add("ledger_applied", a)
	m.add("ledger_missed", mi)
	m.add("ledger_unreadable", u)
}
func (m *countingMetrics) CallsAnswered(n int) { m.add("answered", n) }
func (m *countingMetrics) UserTextEdits(taken, made int) {
	m.add("user_text_memo", taken)
	m.add("user_text_made", made)
}
func (m *countingMetrics) FollowUp(string)                       { m.add("followups", 1) }
func (m *countingMetrics) Continuation(string)                   { m.add("continuations", 1) }
func (m *countingMetrics) Truncated(_, stop string)              { m.add("truncated_"+stop, 1) }
func (m *countingMetrics) Recovery(_, r string, _ time.Duration) { m.add("recovery_"+r, 1) }

// policyHook claims calls named "topic", refuses calls named "rm", and
// asks to continue a reply cut by the output limit once.
type policyHook struct{}

func (policyHook) Name() string { return "policy" }
func (policyHook) OnReply(_ context.Context, call *hooks.Call, r *conv.Reply) (hooks.ReplyDecision, error) {
	var d hooks.ReplyDecision
	if r.Stop == conv.StopMaxTokens && call.Recoveries < 1 {
		d.Continue = &conv.Continuation{Instruction: "Continue."}
		return d, nil
	}
	for _, c := range r.ToolCalls {
		switch c.Name {
		case "topic":
			d.Calls = append(d.Calls, conv.CallDecision{CallIndex: c.Index, Verdict: conv.Claim, Result: "ok"})
		case "rm":
			d.Calls = append(d.Calls, conv.CallDecision{CallIndex: c.Index, Verdict: conv.Refuse, Result: "refused: out of scope"})
		}
	}
	return d, nil
}

// outcomeHook records the outcomes it sees.
type outcomeHook struct{ got []*conv.TurnOutcome }

func (*outcomeHook) Name() string { return "outcomes" }
func (o *outcomeHook) OnOutcome(_ context.Context, _ *hooks.Call, out *conv.TurnOutcome) error {
	o.got = append(o.got, out)
	return nil
}

// scriptWriter is a Writer over scripted replies. It stands for either
// kind: it records what was released per reply (a stream writer's work)
// and the Final (a JSON writer's).
type scriptWriter struct {
	replies  [][]byte
	released [][]int
	final    *Final
	readErr  error
	// keepAlives counts KeepAlive calls; gone makes them fail.
	keepAlives int
	gone       bool
}

func (w *scriptWriter) Read() ([]byte, bool, error) {
	if w.readErr != nil {
		return nil, false, w.readErr
	}
	r := w.replies[0]
	w.replies = w.replies[1:]
	return r, true, nil
}
func (w *scriptWriter) Release(remove, _ []int) error {
	w.released = append(w.released, remove)
	return nil
}
func (w *scriptWriter) Follow(resp *fasthttp.Response, _ bool) error {
	defer fasthttp.ReleaseResponse(resp)
	w.replies = append(w.replies, append([]byte(nil), resp.Body()...))
	return nil
}
func (w *scriptWriter) Finish(f Final) { w.final = &f }

func (w *scriptWriter) KeepAlive() error {
	w.keepAlives++
	if w.gone {
		return ErrClientGone
	}
	return nil
}

// scriptSender answers each request with the next scripted reply and
// keeps the bodies sent.
type scriptSender struct {
	replies []string
	sent    []string
}

func (s *scriptSender) Send(body []byte) (*fasthttp.Response, error) {
	s.sent = append(s.sent, string(body))
	if len(s.replies) == 0 {
		return nil, fmt.Errorf("no reply scripted")
	}
	resp := fasthttp.AcquireResponse()
	resp.SetBodyString(s.replies[0])
	s.replies = s.replies[1:]
	return resp, nil
}

func reply(stop string, text string, calls ...string) string {
	var blocks []string
	if text != "" {
		blocks = append(blocks, fmt.Sprintf(`{"type":"text","text":%q}`, text))
	}
	for i, name := range calls {
		blocks = append(blocks, fmt.Sprintf(`{"type":"tool_use","id":"toolu_%s_%d","name":%q,"input":{}}`, name, i, name))
	}
	return `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[` + strings.Join(blocks, ",") +
		`],"stop_reason":"` + stop + `","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`
}

const agentRequest = `{"model":"m","max_tokens":100,"tools":[{"name":"rm","input_schema":{"type":"object"}},{"name":"ls","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hello"}]}`

type fixture struct {
	e       *Engine
	store   state.Store
	metrics *countingMetrics
	out     *outcomeHook
	chain   *hooks.Chain
}

func newFixture(t *testing.T, limits Limits) *fixture {
	t.Helper()
	f := &fixture{store: state.NewMemory(state.MemoryOptions{MaxSessions: 10, TTL: time.Hour}), metrics: &countingMetrics{}, out: &outcomeHook{}}
	f.chain = hooks.NewChain(policyHook{}, f.out)
	f.e = New(Options{Store: f.store, Metrics: f.metrics, Limits: limits, Recovery: true, SessionFor: func(fp string) string { return "fp-" + fp }})
	return f
}

// run begins and runs one Anthropic turn whose first reply is first and
// whose follow-ups get more.
func (f *fixture) run(t *testing.T, first string, more ...string) (*scriptWriter, *scriptSender) {
	t.Helper()
	codec := anthropic.Descriptor.Codec()
	view, err := codec.ParseRequest([]byte(agentRequest))
	require.NoError(t, err)
	cc, _ := rewrite.Continuer(codec)
	tn, st := f.e.Begin(context.Background(), Request{
		Call:  hooks.Call{Route: "messages", Tenant: "t", SessionID: "s1"},
		Chain: f.chain, Codec: codec, TurnCodec: codec, Continuer: cc,
		View: view, Body: []byte(agentRequest),
	})
	require.NotNil(t, tn)
	require.Nil(t, st.Short)
	w := &scriptWriter{replies: [][]byte{[]byte(first)}}
	up := &scriptSender{replies: more}
	require.NoError(t, tn.Run(context.Background(), w, up))
	return w, up
}

func fates(out *conv.TurnOutcome) []string {
	var s []string
	for _, c := range out.Calls {
		s = append(s, fmt.Sprintf("%d:%s:%s", c.Round, c.Call.Name, c.Fate))
	}
	return s
}

// A refused call next to one for the agent: the agent gets its call, the
// refusal goes to the ledger, and the outcome says so, once.
func TestOutcomeRefusedAndDelivered(t *testing.T) {
	f := newFixture(t, Limits{MaxFollowups: 4, MaxRefusalRounds: 4})
	w, up := f.run(t, reply("tool_use", "doing", "rm", "ls"))
	require.Empty(t, up.sent)
	require.Equal(t, [][]int{{0}}, w.released)
	require.NotContains(t, string(w.final.Reply), "toolu_rm_0")
	require.Contains(t, string(w.final.Reply), "toolu_ls_1")

	require.Len(t, f.out.got, 1)
	out := f.out.got[0]
	require.Equal(t, []string{"0:rm:refused", "0:ls:delivered"}, fates(out))
	require.Equal(t, "refused: out of scope", out.Calls[0].Result)
	require.Equal(t, "policy", out.Calls[0].Hook)
	require.Empty(t, out.Calls[1].Hook)
	require.Equal(t, conv.StopToolUse, out.Stop)
	require.Equal(t, 1, out.Rounds)
	require.Equal(t, conv.Usage{InputTokens: 10, OutputTokens: 5}, out.Usage)
	require.NoError(t, out.Err)

	sess, err := f.store.Get(context.Background(), state.Key{Tenant: "t", Session: "s1"})
	require.NoError(t, err)
	require.Len(t, sess.Ledger, 1)
	data := sess.Ledger[0].Data
	require.Equal(t, int64(1), gjson.GetBytes(data, "v").Int())
	require.Equal(t, "toolu_rm_0", gjson.GetBytes(data, "results.0.call_id").String())
	require.True(t, gjson.GetBytes(data, "results.0.is_error").Bool())
}

// Every call refused: a refusal round asks the model again within the
// turn; usage is summed over the rounds.
func TestRefusalRoundFollowsUp(t *testing.T) {
	f := newFixture(t, Limits{MaxFollowups: 4, MaxRefusalRounds: 4})
	w, up := f.run(t, reply("tool_use", "", "rm"), reply("end_turn", "done"))
	require.Len(t, up.sent, 1)
	require.Contains(t, up.sent[0], "refused: out of scope")
	require.Contains(t, string(w.final.Reply), "done")
	require.Equal(t, 1, f.metrics.get("followups"))
	out := f.out.got[0]
	require.Equal(t, []string{"0:rm:refused"}, fates(out))
	require.Equal(t, 2, out.Rounds)
	require.Equal(t, conv.StopEnd, out.Stop)
	require.Equal(t, conv.Usage{InputTokens: 20, OutputTokens: 10}, out.Usage)
}

// turns.max_refusal_rounds bounds refusal rounds, and only them.
func TestRefusalRoundsBound(t *testing.T) {
	f := newFixture(t, Limits{MaxFollowups: 4, MaxRefusalRounds: 1})
	_, up := f.run(t, reply("tool_use", "", "rm"), reply("tool_use", "", "rm"), reply("end_turn", "never"))
	require.Len(t, up.sent, 1, "one refusal round, then the refusal waits for the next request")
	out := f.out.got[0]
	require.Equal(t, []string{"0:rm:refused", "1:rm:refused"}, fates(out))

	f = newFixture(t, Limits{MaxFollowups: 0, MaxRefusalRounds: 2})
	_, up = f.run(t, reply("tool_use", "", "rm"), reply("tool_use", "", "rm"), reply("end_turn", "ok"))
	require.Len(t, up.sent, 2, "max_followups does not bound refusal rounds")
}

// turns.max_followups bounds the follow-ups after claimed calls, and only
// them.
func TestFollowupsBound(t *testing.T) {
	f := newFixture(t, Limits{MaxFollowups: 1, MaxRefusalRounds: 4})
	_, up := f.run(t, reply("tool_use", "", "topic"), reply("tool_use", "", "topic"), reply("end_turn", "never"))
	require.Len(t, up.sent, 1)
	require.Equal(t, []string{"0:topic:claimed", "1:topic:claimed"}, fates(f.out.got[0]))

	f = newFixture(t, Limits{MaxFollowups: 2, MaxRefusalRounds: 0})
	_, up = f.run(t, reply("tool_use", "", "topic"), reply("tool_use", "", "topic"), reply("end_turn", "ok"))
	require.Len(t, up.sent, 2, "max_refusal_rounds does not bound claim follow-ups")
}

// A reply cut by the output limit is continued; the agent gets one reply
// and the outcome counts the continuation.
func TestOutcomeTruncationContinuation(t *testing.T) {
	f := newFixture(t, Limits{MaxFollowups: 4, MaxRefusalRounds: 4})
	w, up := f.run(t, reply("max_tokens", "The first half"), reply("end_turn", " and the rest.", "ls"))
	require.Len(t, up.sent, 1)
	require.Contains(t, string(w.final.Reply), "The first half and the rest.")
	require.Equal(t, 1, w.final.Continuations)
	require.Equal(t, 1, f.metrics.get("continuations"))
	require.Equal(t, 1, f.metrics.get("recovery_recovered"))
	out := f.out.got[0]
	require.Equal(t, 2, out.Rounds)
	require.Equal(t, 1, out.Continuations)
	require.Equal(t, conv.StopEnd, out.Stop)
	require.Equal(t, []string{"1:ls:delivered"}, fates(out))
}

// A turn that fails before its reply reaches the agent reports the error
// and saves what it changed.
func TestOutcomeOnFailure(t *testing.T) {
	f := newFixture(t, Limits{MaxFollowups: 4, MaxRefusalRounds: 4})
	codec := anthropic.Descriptor.Codec()
	view, err := codec.ParseRequest([]byte(agentRequest))
	require.NoError(t, err)
	tn, _ := f.e.Begin(context.Background(), Request{
		Call: hooks.Call{Tenant: "t", SessionID: "s2"}, Chain: f.chain, Codec: codec, TurnCodec: codec,
		View: view, Body: []byte(agentRequest),
	})
	w := &scriptWriter{readErr: ErrClientGone}
	require.ErrorIs(t, tn.Run(context.Background(), w, &scriptSender{}), ErrClientGone)
	require.Empty(t, f.out.got, "the reply chain never ran: no outcome")
	sess, err := f.store.Get(context.Background(), state.Key{Tenant: "t", Session: "s2"})
	require.NoError(t, err)
	require.Equal(t, int64(1), sess.Requests)
}

// textHook records the text of the replies it sees; reads says whether it
// declares that it reads it (hooks.ReplyTextReader).
type textHook struct {
	reads bool
	got   []string
}

func (*textHook) Name() string           { return "text" }
func (h *textHook) ReadsReplyText() bool { return h.reads }
func (h *textHook) OnReply(_ context.Context, _ *hooks.Call, r *conv.Reply) (hooks.ReplyDecision, error) {
	h.got = append(h.got, r.Text)
	return hooks.ReplyDecision{}, nil
}

// A reply's text is decoded for a chain with a hook that reads it, and
// only then; the tool calls are viewed either way.
func TestReplyTextOnlyForHooksThatReadIt(t *testing.T) {
	for _, reads := range []bool{true, false} {
		f := newFixture(t, Limits{MaxFollowups: 4, MaxRefusalRounds: 4})
		th := &textHook{reads: reads}
		f.chain = hooks.NewChain(policyHook{}, f.out, th)
		require.Equal(t, reads, f.chain.ReadsReplyText())
		w, _ := f.run(t, reply("tool_use", "doing", "rm", "ls"))
		require.Equal(t, [][]int{{0}}, w.released, "the refusal needs the calls, text or not")
		want := ""
		if reads {
			want = "doing"
		}
		require.Equal(t, []string{want}, th.got, "reads=%v", reads)
	}
}
