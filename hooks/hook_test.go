package hooks

import (
	"context"
	"errors"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/stretchr/testify/require"
)

// fakeHook records its calls in a shared log and returns scripted results.
type fakeHook struct {
	name  string
	log   *[]string
	edits conv.RequestEdits
	resp  *Response
	err   error
	reply ReplyDecision
	rerr  error
}

func (f *fakeHook) Name() string { return f.name }

func (f *fakeHook) OnRequest(_ context.Context, _ *Call, _ *conv.Request) (conv.RequestEdits, *Response, error) {
	*f.log = append(*f.log, "req:"+f.name)
	return f.edits, f.resp, f.err
}

func (f *fakeHook) OnReply(_ context.Context, _ *Call, _ *conv.Reply) (ReplyDecision, error) {
	*f.log = append(*f.log, "reply:"+f.name)
	return f.reply, f.rerr
}

// requestOnly implements only RequestHook.
type requestOnly struct{ fakeHook }

func (r *requestOnly) OnReply() {} // shadows the ReplyHook method with another signature

func TestChainRequestOrderAndMerge(t *testing.T) {
	var log []string
	a := &fakeHook{name: "a", log: &log, edits: conv.RequestEdits{AppendSystem: []string{"A"}, SetMaxOutputTokens: 100}}
	b := &fakeHook{name: "b", log: &log, edits: conv.RequestEdits{AppendSystem: []string{"B"}, AddTools: []conv.ToolSpec{{Name: "t"}}, SetMaxOutputTokens: 200}}
	c := NewChain(a, b)
	edits, resp, err := c.RunRequest(context.Background(), &Call{}, &conv.Request{})
	require.NoError(t, err)
	require.Nil(t, resp)
	require.Equal(t, []string{"req:a", "req:b"}, log)
	require.Equal(t, []string{"A", "B"}, edits.AppendSystem)
	require.Equal(t, "t", edits.AddTools[0].Name)
	require.Equal(t, int64(200), edits.SetMaxOutputTokens, "a later limit wins")
}

func TestChainShortCircuitStopsLaterHooks(t *testing.T) {
	var log []string
	a := &fakeHook{name: "a", log: &log, edits: conv.RequestEdits{AppendUserText: []string{"x"}}}
	b := &fakeHook{name: "b", log: &log, resp: &Response{Status: 403, Message: "no"}}
	c := &fakeHook{name: "c", log: &log}
	edits, resp, err := NewChain(a, b, c).RunRequest(context.Background(), &Call{}, &conv.Request{})
	require.NoError(t, err)
	require.Equal(t, &Response{Status: 403, Message: "no"}, resp)
	require.Equal(t, []string{"req:a", "req:b"}, log)
	require.Equal(t, []string{"x"}, edits.AppendUserText)
}

func TestChainFailingHookIsSkipped(t *testing.T) {
	var log []string
	boom := errors.New("boom")
	a := &fakeHook{name: "a", log: &log, err: boom, edits: conv.RequestEdits{AppendSystem: []string{"dropped"}}}
	b := &fakeHook{name: "b", log: &log, edits: conv.RequestEdits{AppendSystem: []string{"kept"}}}
	edits, resp, err := NewChain(a, b).RunRequest(context.Background(), &Call{}, &conv.Request{})
	require.Nil(t, resp)
	require.ErrorIs(t, err, boom)
	var he *HookError
	require.ErrorAs(t, err, &he)
	require.Equal(t, "a", he.Hook)
	require.Equal(t, []string{"kept"}, edits.AppendSystem, "a failed hook's edits are dropped")
	require.Equal(t, []string{"req:a", "req:b"}, log)
}

func TestChainReplyReverseOrderFirstDecisionWins(t *testing.T) {
	var log []string
	a := &fakeHook{name: "a", log: &log, reply: ReplyDecision{
		Calls:     []conv.CallDecision{{CallIndex: 0, Verdict: conv.Refuse, Result: "a refuses"}, {CallIndex: 1, Verdict: conv.Claim, Result: "a claims"}},
		MoveFirst: []int{1},
	}}
	b := &fakeHook{name: "b", log: &log, reply: ReplyDecision{
		Calls:     []conv.CallDecision{{CallIndex: 0, Verdict: conv.Claim, Result: "b claims"}, {CallIndex: 2, Verdict: conv.Pass}},
		MoveFirst: []int{2},
	}}
	d, err := NewChain(a, b).RunReply(context.Background(), &Call{}, &conv.Reply{})
	require.NoError(t, err)
	require.Equal(t, []string{"reply:b", "reply:a"}, log, "reply hooks run in reverse order")
	require.Equal(t, []conv.CallDecision{
		{CallIndex: 0, Verdict: conv.Claim, Result: "b claims", Hook: "b"},
		{CallIndex: 1, Verdict: conv.Claim, Result: "a claims", Hook: "a"},
	}, d.Calls, "b ran first and decided call 0; conv.Pass decides nothing")
	require.Equal(t, []int{2, 1}, d.MoveFirst)
}

func TestChainReplyErrorDropsDecision(t *testing.T) {
	var log []string
	a := &fakeHook{name: "a", log: &log, rerr: errors.New("bad"), reply: ReplyDecision{Calls: []conv.CallDecision{{CallIndex: 0, Verdict: conv.Refuse}}}}
	d, err := NewChain(a).RunReply(context.Background(), &Call{}, &conv.Reply{})
	require.Error(t, err)
	require.Empty(t, d.Calls)
}

func TestChainPhasesByInterface(t *testing.T) {
	var log []string
	r := &requestOnly{fakeHook{name: "r", log: &log}}
	c := NewChain(r)
	require.False(t, c.Empty())
	require.False(t, c.HasReplyHooks(), "a hook without OnReply(ctx, call, reply) is not a reply hook")
	var nilChain *Chain
	require.True(t, nilChain.Empty())
	_, _, err := nilChain.RunRequest(context.Background(), &Call{}, &conv.Request{})
	require.NoError(t, err)
}

func TestRequestEditsEmpty(t *testing.T) {
	require.True(t, (&conv.RequestEdits{}).Empty())
	require.False(t, (&conv.RequestEdits{SetMaxOutputTokens: 1}).Empty())
	require.False(t, (&conv.RequestEdits{AppendUserText: []string{""}}).Empty())
}

func TestRequestHasTool(t *testing.T) {
	r := &conv.Request{Tools: []conv.ToolDef{{Name: "Read"}, {Name: "create_new_topic"}}}
	require.True(t, r.HasTool("create_new_topic"))
	require.False(t, r.HasTool("select_active_intent"))
}
