package topics

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// Each accepted create_new_topic emits chapter.opened with the chapter it
// follows (the session's active topic, then the reply's previous one); a
// call without a title opens nothing.
func TestTopicsEmitChapterOpened(t *testing.T) {
	rec := &events.Recorder{}
	h := New(Options{Now: func() time.Time { return fixedNow }, Events: rec})
	sess := &state.Session{}
	sess.SetSlot(Name, &State{Topic: "Research"})
	call := &hooks.Call{SessionID: "s1", Tenant: "t1", Route: "messages", RequestID: "r-1", Session: sess}
	_, err := h.OnReply(context.Background(), call, &conv.Reply{ToolCalls: []conv.ToolCall{
		{Index: 0, ID: "a", Name: DefaultTopicTool, Args: []byte(`{"title":"Fix"}`)},
		{Index: 1, ID: "b", Name: DefaultTopicTool, Args: []byte(`{}`)},
		{Index: 2, ID: "c", Name: DefaultTopicTool, Args: []byte(`{"title":"Test"}`)},
	}})
	require.NoError(t, err)
	base := events.Event{Type: events.ChapterOpened, At: fixedNow, Session: "s1", Tenant: "t1", Route: "messages", RequestID: "r-1"}
	first, second := base, base
	first.Data = map[string]any{"title": "Fix", "previous": "Research"}
	second.Data = map[string]any{"title": "Test", "previous": "Fix"}
	require.Equal(t, []events.Event{first, second}, rec.All())
}
