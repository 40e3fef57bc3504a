package edits

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// feedBytes hands args to obs one byte per delta, the first delta carrying
// id and name, then Done; after each delta it calls each.
func feedBytes(obs conv.CallObserver, stream, index int, id, name, args string, each func(fed int)) {
	// The strings alias a buffer that is overwritten after each delta, as
	// a splicer's may be.
	buf := []byte(id + name)
	obs(conv.ToolCallDelta{Stream: stream, Index: index, ID: unsafe.String(&buf[0], len(id)), Name: unsafe.String(&buf[len(id)], len(name))})
	clear(buf)
	frag := make([]byte, 1)
	for i := range len(args) {
		frag[0] = args[i]
		obs(conv.ToolCallDelta{Stream: stream, Index: index, Fragment: unsafe.String(&frag[0], 1)})
		frag[0] = '#'

		if each != nil {
			each(i + 1)
		}
	}
	obs(conv.ToolCallDelta{Stream: stream, Index: index, Done: true})
}

// TestWatchAnnouncesBeforeContentEnds: fed byte by byte, a Write is
// announced once its path is complete, long before its content ends, with
// the session's chapter and intent; edit.finished follows with the size.
func TestWatchAnnouncesBeforeContentEnds(t *testing.T) {
	r := newRig(t, nil)
	obs := r.h.WatchCalls(callOn(session("Implementing Fix", "INT-001"), user("go")))
	require.NotNil(t, obs)
	content := strings.Repeat("line of the new file\n", 50)
	a := `{"file_path":"/w/new.go","content":` + strings.TrimSuffix(string(args("c", content))[5:], "}") + `}`
	pathEnd := strings.Index(a, `/w/new.go"`) + len(`/w/new.go"`)
	announcedAt := -1
	feedBytes(obs, 0, 0, "toolu_1", "Write", a, func(fed int) {
		if announcedAt < 0 && len(r.ev.All()) > 0 {
			announcedAt = fed
		}
	})
	require.Positive(t, announcedAt)
	require.LessOrEqual(t, announcedAt, pathEnd+2, "announced as soon as the path is complete")
	require.Less(t, announcedAt, len(a)-len(content)/2, "long before the content ends")

	evs := r.ev.All()
	require.Len(t, evs, 2)
	require.Equal(t, events.EditStarted, evs[0].Type)
	require.Equal(t, map[string]any{"tool": "Write", "call_id": "toolu_1", "path": "/w/new.go", "operation": state.EditCreate,
		"chapter": "Implementing Fix", "intent": "INT-001"}, evs[0].Data)
	require.Equal(t, testKey.Session, evs[0].Session)
	require.Equal(t, testKey.Tenant, evs[0].Tenant)
	require.Equal(t, "req1", evs[0].RequestID)
	require.Equal(t, events.EditFinished, evs[1].Type)
	require.Equal(t, int64(len(content)), evs[1].Data["size"])
	require.Equal(t, "/w/new.go", evs[1].Data["path"])
}

// TestWatchOperation: a Write of a file the session read is a rewrite, of
// one an earlier call of the turn wrote too; an Edit is a modify; calls of
// other tools, interleaved, are ignored.
func TestWatchOperation(t *testing.T) {
	r := newRig(t, nil)
	obs := r.h.WatchCalls(callOn(session("", ""),
		assistantCall("r1", "Read", args("file_path", "a.txt")),
		result("r1", "Read", readResult("hello\n"), false),
	))
	obs(conv.ToolCallDelta{Index: 0, ID: "b1", Name: "Bash", Fragment: `{"command":"ls`})
	feedBytes(obs, 0, 1, "w1", "Write", string(args("file_path", "a.txt", "content", "x")), nil)
	obs(conv.ToolCallDelta{Index: 0, Fragment: `"}`, Done: true})
	feedBytes(obs, 0, 2, "w2", "Write", string(args("file_path", "b.txt", "content", "x")), nil)
	feedBytes(obs, 1, 0, "w3", "Write", string(args("file_path", "b.txt", "content", "y")), nil)
	feedBytes(obs, 1, 1, "e1", "Edit", string(args("file_path", "c.txt", "old_string", "a", "new_string", "bb")), nil)
	feedBytes(obs, 1, 2, "w4", "Write", string(args("file_path", "c.txt", "content", "z")), nil)

	var got []string
	for _, ev := range r.ev.All() {
		if ev.Type == events.EditStarted {
			got = append(got, ev.Data["path"].(string)+" "+ev.Data["operation"].(string))
		}
	}
	require.Equal(t, []string{"a.txt rewrite", "b.txt create", "b.txt rewrite", "c.txt modify", "c.txt rewrite"}, got)
}

// TestWatchJSONReply: a JSON reply gives each call as one delta with Done
// set: started and finished are both emitted.
func TestWatchJSONReply(t *testing.T) {
	r := newRig(t, nil)
	obs := r.h.WatchCalls(callOn(session("", ""), user("go")))
	obs(conv.ToolCallDelta{ID: "w1", Name: "Write", Fragment: string(args("file_path", "a.txt", "content", "abc")), Done: true})
	evs := r.ev.All()
	require.Len(t, evs, 2)
	require.Equal(t, events.EditStarted, evs[0].Type)
	require.Equal(t, events.EditFinished, evs[1].Type)
	require.Equal(t, int64(3), evs[1].Data["size"])
}

// TestWatchUnparsable: a call whose arguments never name a path announces
// nothing and does not panic.
func TestWatchUnparsable(t *testing.T) {
	r := newRig(t, nil)
	obs := r.h.WatchCalls(callOn(session("", ""), user("go")))
	feedBytes(obs, 0, 0, "w1", "Write", `{"content":"x"`, nil)
	require.Empty(t, r.ev.All())
}

// TestWatchLiveChapter: a call that begins after a reply decision of the
// turn opened a chapter (Call.Live set: the topics call shepherd answered
// before this follow-up) is announced with it, started and finished alike;
// a call begun before keeps the chapter it began under.
func TestWatchLiveChapter(t *testing.T) {
	r := newRig(t, nil)
	call := callOn(session("", ""), user("go"))
	obs := r.h.WatchCalls(call)
	obs(conv.ToolCallDelta{Stream: 0, Index: 0, ID: "w0", Name: "Write", Fragment: `{"file_path":"a.txt","content":"`})
	call.Live = session("Implementing Fix", "INT-001")
	obs(conv.ToolCallDelta{Stream: 0, Index: 0, Fragment: `x"}`, Done: true})
	feedBytes(obs, 1, 0, "w1", "Write", string(args("file_path", "b.txt", "content", "x")), nil)

	evs := r.ev.All()
	require.Len(t, evs, 4)
	for _, ev := range evs[:2] {
		require.Equal(t, "w0", ev.Data["call_id"])
		require.Equal(t, "", ev.Data["chapter"], "begun before the chapter opened")
	}
	for _, ev := range evs[2:] {
		require.Equal(t, "w1", ev.Data["call_id"])
		require.Equal(t, "Implementing Fix", ev.Data["chapter"], "%s: the chapter the turn opened", ev.Type)
		require.Equal(t, "INT-001", ev.Data["intent"])
	}
}
