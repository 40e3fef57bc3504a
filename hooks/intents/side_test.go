package intents

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/hooks/topics"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// TestSideRequestsGetNoInjection: topics and intents (with topics, as in the
// chain) add nothing to a side
// request, and intents does not save a new session's starting intent from
// one.
func TestSideRequestsGetNoInjection(t *testing.T) {
	p := mustPolicy(t, intentsYAML)
	in := newIntentsFixture(t, p, nil).h
	topics := topics.New(topics.Options{ToolName: "create_new_topic"})
	req := &conv.Request{Tools: nil}
	for _, h := range []hooks.RequestHook{in, topics} {
		call := &hooks.Call{Session: &state.Session{}, Request: req}
		e, _, err := h.OnRequest(context.Background(), call, req)
		require.NoError(t, err)
		require.NotEmpty(t, e.AddTools, "%s injects into an agent turn", h.Name())
		call.Side = "no_tools"
		e, resp, err := h.OnRequest(context.Background(), call, req)
		require.NoError(t, err)
		require.Nil(t, resp)
		require.Equal(t, conv.RequestEdits{}, e, "%s injects nothing into a side request", h.Name())
	}

	withCurrent := mustPolicy(t, "version: 1\ncurrent_intent_id: INT-001\n"+intentsYAML[len("version: 1\ncurrent_intent_id: null\n"):])
	in = newIntentsFixture(t, withCurrent, nil).h
	call := &hooks.Call{Session: &state.Session{}, Request: req, Side: "json_output"}
	d, err := in.OnReply(context.Background(), call, &conv.Reply{Text: `{"title":"x"}`})
	require.NoError(t, err)
	require.Empty(t, d.Effects, "a side request does not start the session's intent")
	call.Side = ""
	d, err = in.OnReply(context.Background(), call, &conv.Reply{Text: "hi"})
	require.NoError(t, err)
	require.Len(t, d.Effects, 1, "an agent turn does")
}
