package turn

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// chapterHook claims calls named "topic" with an effect that opens the
// next chapter (a slot noting "chapter N", N counting the effects ever
// applied to it), and watches the turn's calls, noting the chapter of the
// turn's live session as each delta arrives.
type chapterHook struct {
	watched []string
	lives   []*state.Session
}

func (*chapterHook) Name() string { return "chapter" }

func bumpChapter(s *state.Session) {
	n := 0
	if r, ok := s.Slots["chapter"].(*state.RawSlot); ok {
		n, _ = strconv.Atoi(string(r.Data))
	}
	n++
	s.SetSlot("chapter", &state.RawSlot{V: 1, Data: []byte(strconv.Itoa(n)), Noted: fmt.Sprintf("chapter %d", n)})
}

func (h *chapterHook) OnReply(_ context.Context, _ *hooks.Call, r *conv.Reply) (hooks.ReplyDecision, error) {
	var d hooks.ReplyDecision
	for _, c := range r.ToolCalls {
		if c.Name == "topic" {
			d.Calls = append(d.Calls, conv.CallDecision{CallIndex: c.Index, Verdict: conv.Claim, Result: "ok"})
			d.Effects = append(d.Effects, bumpChapter)
		}
	}
	return d, nil
}

func (h *chapterHook) WatchCalls(call *hooks.Call) conv.CallObserver {
	return func(d conv.ToolCallDelta) {
		h.watched = append(h.watched, fmt.Sprintf("%d %s %q", d.Stream, d.Name, call.Live.Note("chapter")))
		h.lives = append(h.lives, call.Live)
	}
}

// savedHook keeps what the outcome hooks get.
type savedHook struct{ call hooks.Call }

func (*savedHook) Name() string { return "saved" }
func (s *savedHook) OnOutcome(_ context.Context, call *hooks.Call, _ *conv.TurnOutcome) error {
	s.call = *call
	return nil
}

// The effects a reply decision asks for are in the turn's live session
// (hooks.Call.Live) before the follow-up's calls arrive, each applied once
// (cumulatively, over rounds, to one clone); the session loaded at the
// start is left alone; the save applies every effect exactly once.
func TestLiveSession(t *testing.T) {
	f := newFixture(t, Limits{MaxFollowups: 4, MaxRefusalRounds: 4})
	key := state.Key{Tenant: "t", Session: "s1"}
	_, err := f.store.Update(context.Background(), key, func(s *state.Session) error { return nil })
	require.NoError(t, err)
	h, saved := &chapterHook{}, &savedHook{}
	f.chain = hooks.NewChain(h, saved)
	tn := f.begin(t)
	loaded := tn.call.Session
	w := &scriptWriter{replies: [][]byte{[]byte(reply("tool_use", "", "topic"))}}
	up := &scriptSender{replies: []string{reply("tool_use", "", "topic"), reply("tool_use", "", "ls")}}
	require.NoError(t, tn.Run(context.Background(), w, up))

	require.Equal(t, []string{
		`0 topic ""`,
		`1 topic "chapter 1"`,
		`2 ls "chapter 2"`,
	}, h.watched, "each round's calls see the effects of the rounds before")
	require.Nil(t, h.lives[0], "no live session before the turn has effects")
	require.Same(t, h.lives[1], h.lives[2], "one clone per turn, updated in place")
	require.Empty(t, loaded.Slots, "the loaded session is not changed")
	require.Same(t, saved.call.Live, saved.call.Session, "later reply hooks see the live session")

	sess, err := f.store.Get(context.Background(), key)
	require.NoError(t, err)
	require.Equal(t, "chapter 2", sess.Note("chapter"), "each effect saved once")
	require.Equal(t, "chapter 2", saved.call.Saved.Note("chapter"))
}

// A turn whose replies ask for no effect has no live session.
func TestLiveSessionNone(t *testing.T) {
	f := newFixture(t, Limits{MaxFollowups: 4, MaxRefusalRounds: 4})
	h, saved := &chapterHook{}, &savedHook{}
	f.chain = hooks.NewChain(h, saved)
	f.run(t, reply("tool_use", "", "ls"))
	require.Equal(t, []string{`0 ls ""`}, h.watched)
	require.Nil(t, saved.call.Live)
}
