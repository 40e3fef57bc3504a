package topics

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// TestSlotVersions: the slot reads a version-0 slot (the legacy record's
// top-level "topic" and "chapters", as the store hands them over), its own
// version after a round trip through the store's encoding, and refuses an
// unknown version.
func TestSlotVersions(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	want := &State{Topic: "Fix", Chapters: []Chapter{{Title: "Fix", StartedAt: at, Calls: []CallNote{{Name: "Edit", ID: "c1", At: at}}}}}

	legacy := &state.Session{}
	legacy.SetSlot(Name, &state.RawSlot{V: 0, Data: json.RawMessage(
		`{"topic":"Fix","chapters":[{"title":"Fix","started_at":"2025-03-04T05:06:07Z","calls":[{"name":"Edit","id":"c1","at":"2025-03-04T05:06:07Z"}]}]}`)})
	got, err := Of(legacy)
	require.NoError(t, err)
	require.Equal(t, want, got)

	cur := &state.Session{}
	cur.SetSlot(Name, want)
	b, err := json.Marshal(cur)
	require.NoError(t, err)
	var back state.Session
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, "Fix", back.Note(Name), "the listing note survives without decoding")
	got, err = Of(&back)
	require.NoError(t, err)
	require.Equal(t, want, got)

	future := &state.Session{}
	future.SetSlot(Name, &state.RawSlot{V: SlotVersion + 1, Data: json.RawMessage(`{"topic":"x"}`)})
	_, err = Of(future)
	require.ErrorContains(t, err, "newer than this build reads")

	none, err := Of(&state.Session{})
	require.NoError(t, err)
	require.Nil(t, none)
}

// TestUnreadableSlotIsKept: a reply's effects leave a slot this build cannot
// read as it is, and the request side reports the error (fail-open).
func TestUnreadableSlotIsKept(t *testing.T) {
	h := newTestTopics("")
	future := &state.RawSlot{V: SlotVersion + 1, Data: json.RawMessage(`{"topic":"x"}`)}
	sess := &state.Session{}
	sess.SetSlot(Name, future)
	d, err := h.OnReply(t.Context(), callOn(sess), replyWithTopic("New"))
	require.NoError(t, err)
	for _, fx := range d.Effects {
		fx(sess)
	}
	require.Same(t, future, sess.Slots[Name])
	_, _, err = h.OnRequest(t.Context(), callOn(sess), reqEmpty())
	require.Error(t, err)
}

func callOn(sess *state.Session) *hooks.Call {
	return &hooks.Call{Session: sess, Request: &conv.Request{}}
}

func reqEmpty() *conv.Request { return &conv.Request{} }

func replyWithTopic(title string) *conv.Reply {
	return &conv.Reply{ToolCalls: []conv.ToolCall{{Index: 0, ID: "t", Name: DefaultTopicTool, Args: []byte(`{"title":"` + title + `"}`)}}}
}
