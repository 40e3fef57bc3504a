package turn

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/anthropic"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// traceLog records what the engine reports to a Trace, in order.
type traceLog struct{ got []string }

func (l *traceLog) HookPhaseStarted(p HookPhase) { l.got = append(l.got, "start "+string(p)) }
func (l *traceLog) HookPhaseEnded(p HookPhase, err error) {
	s := "end " + string(p)
	if err != nil {
		s += " (failed)"
	}
	l.got = append(l.got, s)
}
func (l *traceLog) RoundReplied(r *conv.Reply) { l.got = append(l.got, "replied "+string(r.Stop)) }
func (l *traceLog) RoundSending(cont bool) {
	if cont {
		l.got = append(l.got, "sending continuation")
		return
	}
	l.got = append(l.got, "sending followup")
}
func (l *traceLog) OpeningSaved(s string) { l.got = append(l.got, "opening saved "+s) }

// TestTraceOrder: a turn reports its hook phases and rounds in order: the
// request hooks, then per reply the round's end and the reply hooks, the
// kind of each request sent within the turn, and the outcome hooks last.
func TestTraceOrder(t *testing.T) {
	f := newFixture(t, Limits{MaxFollowups: 4, MaxRefusalRounds: 4})
	codec := anthropic.Descriptor.Codec()
	view, err := codec.ParseRequest([]byte(agentRequest))
	require.NoError(t, err)
	cc, _ := rewrite.Continuer(codec)
	log := &traceLog{}
	tn, _ := f.e.Begin(context.Background(), Request{
		Call:  hooks.Call{Route: "messages", Tenant: "t", SessionID: "s1"},
		Chain: f.chain, Codec: codec, TurnCodec: codec, Continuer: cc,
		View: view, Body: []byte(agentRequest), Trace: log,
	})
	require.NotNil(t, tn)
	w := &scriptWriter{replies: [][]byte{[]byte(reply("tool_use", "", "topic"))}}
	up := &scriptSender{replies: []string{reply("max_tokens", "The quick"), reply("end_turn", " fox.")}}
	require.NoError(t, tn.Run(context.Background(), w, up))
	require.Len(t, up.sent, 2)
	require.Equal(t, []string{
		"start request", "end request",
		"replied tool_use", "start reply", "end reply", "sending followup",
		"replied max_tokens", "start reply", "end reply", "sending continuation",
		"replied end", "start reply", "end reply",
		"start outcome", "end outcome",
	}, log.got)
}
