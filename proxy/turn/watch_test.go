package turn

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/anthropic"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// watchHook watches the turn's calls and notes when the reply hooks run,
// in one log.
type watchHook struct {
	log     []string
	watched int // WatchCalls calls
}

func (*watchHook) Name() string { return "watch" }

func (h *watchHook) WatchCalls(*hooks.Call) conv.CallObserver {
	h.watched++
	return func(d conv.ToolCallDelta) {
		h.log = append(h.log, fmt.Sprintf("%d/%d %s %s %q %v", d.Stream, d.Index, d.ID, d.Name, d.Fragment, d.Done))
	}
}

func (h *watchHook) OnReply(context.Context, *hooks.Call, *conv.Reply) (hooks.ReplyDecision, error) {
	h.log = append(h.log, "reply")
	return hooks.ReplyDecision{}, nil
}

// observingWriter is a scriptWriter that reports calls while it "streams"
// each reply: script[i] are the deltas of reply i.
type observingWriter struct {
	scriptWriter
	fn     conv.CallObserver
	script [][]conv.ToolCallDelta
	reads  int
}

func (w *observingWriter) ObserveCalls(fn conv.CallObserver) { w.fn = fn }

func (w *observingWriter) Read() ([]byte, bool, error) {
	if w.reads < len(w.script) && w.fn != nil {
		for _, d := range w.script[w.reads] {
			w.fn(d)
		}
	}
	w.reads++
	return w.scriptWriter.Read()
}

// begin begins an Anthropic turn of the fixture (run without running it).
func (f *fixture) begin(t *testing.T) *Turn {
	t.Helper()
	codec := anthropic.Descriptor.Codec()
	view, err := codec.ParseRequest([]byte(agentRequest))
	require.NoError(t, err)
	tn, st := f.e.Begin(context.Background(), Request{
		Call:  hooks.Call{Route: "messages", Tenant: "t", SessionID: "s1"},
		Chain: f.chain, Codec: codec, TurnCodec: codec, View: view, Body: []byte(agentRequest),
	})
	require.NotNil(t, tn)
	require.Nil(t, st.Short)
	return tn
}

func newWatchFixture(t *testing.T) (*fixture, *watchHook) {
	f := newFixture(t, Limits{MaxFollowups: 4, MaxRefusalRounds: 4})
	h := &watchHook{}
	f.chain = hooks.NewChain(policyHook{}, h, f.out)
	return f, h
}

// JSON replies: every call of every round is one delta with Done, before
// the reply hooks decide the reply; the chain is asked once per turn.
func TestWatchCallsJSON(t *testing.T) {
	f, h := newWatchFixture(t)
	f.run(t, reply("tool_use", "", "topic", "rm"), reply("tool_use", "", "ls"))
	require.Equal(t, 1, h.watched)
	require.Equal(t, []string{
		`0/0 toolu_topic_0 topic "{}" true`,
		`0/1 toolu_rm_1 rm "{}" true`,
		"reply",
		`1/0 toolu_ls_0 ls "{}" true`,
		"reply",
	}, h.log)
}

// A writer that observes: what it reported is not reported again; a call
// it left open is closed (Done, no fragment) and a call it never reported
// is reported whole, before the reply hooks run; its deltas after a
// call's Done are dropped.
func TestWatchCallsStreamed(t *testing.T) {
	f, h := newWatchFixture(t)
	tn := f.begin(t)
	w := &observingWriter{script: [][]conv.ToolCallDelta{
		{
			{Stream: 0, Index: 0, ID: "toolu_topic_0", Name: "topic", Fragment: "{"},
			{Stream: 0, Index: 0, Fragment: "}"},
			{Stream: 0, Index: 1, ID: "toolu_rm_1", Name: "rm", Fragment: "{}", Done: true},
			{Stream: 0, Index: 1, Fragment: "late", Done: true},
		},
		{},
	}}
	w.replies = [][]byte{[]byte(reply("tool_use", "", "topic", "rm"))}
	up := &scriptSender{replies: []string{reply("tool_use", "", "ls")}}
	require.NoError(t, tn.Run(context.Background(), w, up))
	require.Equal(t, []string{
		`0/0 toolu_topic_0 topic "{" false`,
		`0/0   "}" false`,
		`0/1 toolu_rm_1 rm "{}" true`,
		`0/0   "" true`,
		"reply",
		`1/0 toolu_ls_0 ls "{}" true`,
		"reply",
	}, h.log)
}

// No watcher in the chain: the writer is not asked to observe.
func TestWatchCallsNone(t *testing.T) {
	f := newFixture(t, Limits{MaxFollowups: 4, MaxRefusalRounds: 4})
	tn := f.begin(t)
	w := &observingWriter{}
	w.replies = [][]byte{[]byte(reply("end_turn", "hi"))}
	require.NoError(t, tn.Run(context.Background(), w, &scriptSender{}))
	require.Nil(t, w.fn)
}
