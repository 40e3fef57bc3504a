package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// aspFixture reads a splice fixture of testdata/anthropic.
func aspFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "anthropic", name))
	require.NoError(t, err)
	return string(b)
}

// aspCRLF converts a fixture's line endings to CRLF.
func aspCRLF(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

// aspFeed feeds one stream to sp, read one byte at a time, and returns what
// the agent got.
func aspFeed(t testing.TB, sp rewrite.StreamSplicer, stream string) []byte {
	t.Helper()
	r := rewrite.NewReader(iotest.OneByteReader(strings.NewReader(stream)))
	var out []byte
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		b, err := sp.Feed(&ev)
		require.NoError(t, err)
		out = append(out, b...)
	}
}

// aspStep is one upstream stream of a turn and the engine's decision on it.
type aspStep struct {
	stream        string
	remove, first []int
}

// aspRun runs a whole turn and returns the agent's bytes and each stream's
// Reply.
func aspRun(t testing.TB, steps ...aspStep) ([]byte, [][]byte) {
	t.Helper()
	sp := Descriptor.NewSplicer()
	var out []byte
	var replies [][]byte
	for i, st := range steps {
		if i > 0 {
			sp.Next()
		}
		out = append(out, aspFeed(t, sp, st.stream)...)
		require.True(t, sp.Done())
		reply, err := sp.Reply()
		require.NoError(t, err)
		replies = append(replies, reply)
		b, err := sp.Release(st.remove, st.first)
		require.NoError(t, err)
		out = append(out, b...)
	}
	b, err := sp.Finish()
	require.NoError(t, err)
	out = append(out, b...)
	require.Equal(t, aspCount(t, out), sp.Events())
	return out, replies
}

// aspCount counts the SSE events in b.
func aspCount(t testing.TB, b []byte) int {
	t.Helper()
	r := rewrite.NewReader(strings.NewReader(string(b)))
	n := 0
	for {
		_, err := r.Next()
		if err == io.EOF {
			return n
		}
		require.NoError(t, err)
		n++
	}
}

// aspAccumulate decodes the agent's stream with anthropic-sdk-go and
// accumulates it into a Message, checking the event order an SDK client
// relies on. It returns the message and the content_block_start indices.
func aspAccumulate(t testing.TB, b []byte) (anthropic.Message, []int64) {
	t.Helper()
	r := rewrite.NewReader(strings.NewReader(string(b)))
	var msg anthropic.Message
	var starts []int64
	var kinds []string
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if len(ev.Data) == 0 {
			continue
		}
		var e anthropic.MessageStreamEventUnion
		require.NoError(t, json.Unmarshal(ev.Data, &e), string(ev.Data))
		require.Equal(t, string(ev.Name), e.Type)
		require.NoError(t, msg.Accumulate(e))
		if e.Type == "content_block_start" {
			starts = append(starts, e.Index)
		}
		if e.Type != "ping" {
			kinds = append(kinds, e.Type)
		}
	}
	require.NotEmpty(t, kinds)
	require.Equal(t, "message_start", kinds[0])
	require.Equal(t, []string{"message_delta", "message_stop"}, kinds[len(kinds)-2:])
	for _, k := range kinds[1 : len(kinds)-2] {
		require.NotContains(t, []string{"message_start", "message_delta", "message_stop", "error"}, k)
	}
	return msg, starts
}

// aspContent returns the accumulated message's content as JSON.
func aspContent(t testing.TB, m anthropic.Message) string {
	t.Helper()
	return gjson.Get(m.RawJSON(), "content").Raw
}

func TestAnthropicSplicePassThrough(t *testing.T) {
	for _, name := range []string{"splice_passthrough.sse", "stream.sse", "splice_followup2.sse"} {
		for _, crlf := range []bool{false, true} {
			t.Run(name+"/crlf="+strconv.FormatBool(crlf), func(t *testing.T) {
				in := aspFixture(t, name)
				if crlf {
					in = aspCRLF(in)
				}
				sp := Descriptor.NewSplicer()
				out := aspFeed(t, sp, in)
				require.True(t, sp.Done())
				reply, err := sp.Reply()
				require.NoError(t, err)
				view, err := apitest.CodecFor(Descriptor).ParseReply(reply)
				require.NoError(t, err)
				var remove []int // stream.sse has a tool call: keep it
				b, err := sp.Release(remove, nil)
				require.NoError(t, err)
				out = append(out, b...)
				b, err = sp.Finish()
				require.NoError(t, err)
				out = append(out, b...)
				if len(view.ToolCalls) == 0 {
					require.Equal(t, in, string(out))
				}
				require.Equal(t, aspCount(t, []byte(in)), sp.Events())
				msg, starts := aspAccumulate(t, out)
				for i, s := range starts {
					require.EqualValues(t, i, s)
				}
				require.JSONEq(t, gjson.GetBytes(reply, "content").Raw, aspContent(t, msg))
			})
		}
	}
}

func TestAnthropicSpliceRemoveTool(t *testing.T) {
	in := aspFixture(t, "splice_tools.sse")
	out, replies := aspRun(t, aspStep{stream: in, remove: []int{0}})
	msg, starts := aspAccumulate(t, out)
	require.Equal(t, []int64{0, 1}, starts)
	require.Len(t, msg.Content, 2)
	require.Equal(t, "text", msg.Content[0].Type)
	require.Equal(t, "Reading both.", msg.Content[0].Text)
	require.Equal(t, "tool_use", msg.Content[1].Type)
	require.Equal(t, "toolu_B", msg.Content[1].ID)
	require.JSONEq(t, `{"path":"b.go"}`, string(msg.Content[1].Input))
	require.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
	require.EqualValues(t, 57, msg.Usage.OutputTokens)
	require.EqualValues(t, 812, msg.Usage.InputTokens)
	require.EqualValues(t, 2048, msg.Usage.CacheReadInputTokens)

	// The agent's blocks are EditReply's, B's events with only the index
	// changed.
	edited, err := anthTC.EditReply(replies[0], []int{0}, nil)
	require.NoError(t, err)
	require.JSONEq(t, gjson.GetBytes(edited, "content").Raw, aspContent(t, msg))
	require.Contains(t, string(out), "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_B\",\"name\":\"read_file\",\"input\":{}}}\n\n")
	require.NotContains(t, string(out), "toolu_A")

	// Removing every call turns tool_use into end_turn.
	out, _ = aspRun(t, aspStep{stream: in, remove: []int{1, 0}})
	msg, starts = aspAccumulate(t, out)
	require.Equal(t, []int64{0}, starts)
	require.Equal(t, anthropic.StopReasonEndTurn, msg.StopReason)
	require.EqualValues(t, 57, msg.Usage.OutputTokens)
	require.Contains(t, string(out), `"delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":57}}`)
}

func TestAnthropicSpliceFollowUp(t *testing.T) {
	for _, crlf := range []bool{false, true} {
		t.Run("crlf="+strconv.FormatBool(crlf), func(t *testing.T) {
			s1, s2 := aspFixture(t, "splice_followup1.sse"), aspFixture(t, "splice_followup2.sse")
			if crlf {
				s1, s2 = aspCRLF(s1), aspCRLF(s2)
			}
			out, replies := aspRun(t, aspStep{stream: s1, remove: []int{0}}, aspStep{stream: s2})
			if crlf {
				require.NotContains(t, strings.ReplaceAll(string(out), "\r\n", ""), "\n")
			}
			require.Equal(t, 1, strings.Count(string(out), "event: message_start"))
			require.Equal(t, 1, strings.Count(string(out), "event: message_delta"))
			require.Equal(t, 1, strings.Count(string(out), "event: message_stop"))
			require.NotContains(t, string(out), "create_new_topic")
			msg, starts := aspAccumulate(t, out)
			require.Equal(t, []int64{0, 1}, starts)
			require.Equal(t, "msg_f1", msg.ID)
			require.Len(t, msg.Content, 2)
			require.Equal(t, "Topic made.", msg.Content[0].Thinking)
			require.Equal(t, "SIG2", msg.Content[0].Signature)
			require.Equal(t, "Fixed it.", msg.Content[1].Text)
			require.Equal(t, anthropic.StopReasonEndTurn, msg.StopReason)
			require.EqualValues(t, 42, msg.Usage.OutputTokens)
			require.EqualValues(t, 560, msg.Usage.InputTokens)
			require.EqualValues(t, 0, msg.Usage.CacheCreationInputTokens)
			require.EqualValues(t, 510, msg.Usage.CacheReadInputTokens)

			// Same as the non-streaming engine's merged reply.
			edited, err := anthTC.EditReply(replies[0], []int{0}, nil)
			require.NoError(t, err)
			merged, err := anthTC.MergeReplies(edited, replies[1])
			require.NoError(t, err)
			require.JSONEq(t, gjson.GetBytes(merged, "content").Raw, aspContent(t, msg))
			require.Equal(t, gjson.GetBytes(merged, "stop_reason").Str, string(msg.StopReason))
			u := gjson.GetBytes(merged, "usage")
			require.Equal(t, u.Get("output_tokens").Int(), msg.Usage.OutputTokens)
			require.Equal(t, u.Get("input_tokens").Int(), msg.Usage.InputTokens)
			require.Equal(t, u.Get("cache_read_input_tokens").Int(), msg.Usage.CacheReadInputTokens)
		})
	}
}

func TestAnthropicSpliceKeptCallThenFollowUp(t *testing.T) {
	// Stream 1 keeps B, stream 2 continues the numbering after it.
	out, _ := aspRun(t,
		aspStep{stream: aspFixture(t, "splice_tools.sse"), remove: []int{0}},
		aspStep{stream: aspFixture(t, "splice_followup2.sse")})
	msg, starts := aspAccumulate(t, out)
	require.Equal(t, []int64{0, 1, 2, 3}, starts)
	var types []string
	for _, c := range msg.Content {
		types = append(types, c.Type)
	}
	require.Equal(t, []string{"text", "tool_use", "thinking", "text"}, types)
	require.EqualValues(t, 57+12, msg.Usage.OutputTokens)
	require.Equal(t, anthropic.StopReasonEndTurn, msg.StopReason)
}

func TestAnthropicSpliceReplies(t *testing.T) {
	pc := apitest.CodecFor(Descriptor)
	for _, name := range []string{"splice_passthrough", "splice_tools", "splice_followup1", "splice_followup2", "splice_mixed"} {
		t.Run(name, func(t *testing.T) {
			want := aspFixture(t, name+".reply.json")
			sp := Descriptor.NewSplicer()
			aspFeed(t, sp, aspFixture(t, name+".sse"))
			require.True(t, sp.Done())
			got, err := sp.Reply()
			require.NoError(t, err)
			require.JSONEq(t, want, string(got))
			gv, err := pc.ParseReply(got)
			require.NoError(t, err)
			wv, err := pc.ParseReply([]byte(want))
			require.NoError(t, err)
			require.Equal(t, wv, gv)
			items, err := anthTC.ReplyAsMessages(got)
			require.NoError(t, err)
			require.Len(t, items, 1)
			require.JSONEq(t, `{"role":"assistant","content":`+gjson.Get(want, "content").Raw+`}`, string(items[0]))
		})
	}
}

func TestAnthropicSpliceMixedFirst(t *testing.T) {
	in := aspFixture(t, "splice_mixed.sse")
	out, replies := aspRun(t, aspStep{stream: in, first: []int{1}})
	msg, starts := aspAccumulate(t, out)
	require.Equal(t, []int64{0, 1, 2, 3, 4, 5}, starts)
	var ids []string
	for _, c := range msg.Content {
		ids = append(ids, c.Type+":"+c.ID)
	}
	// Non-tool blocks stream at once; the tool calls follow in EditReply's
	// order.
	require.Equal(t, []string{"thinking:", "server_tool_use:srvtoolu_1", "web_search_tool_result:",
		"tool_use:toolu_2", "tool_use:toolu_1", "tool_use:toolu_3"}, ids)
	edited, err := anthTC.EditReply(replies[0], nil, []int{1})
	require.NoError(t, err)
	var editedCalls []string
	gjson.GetBytes(edited, "content").ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str == "tool_use" {
			editedCalls = append(editedCalls, "tool_use:"+b.Get("id").Str)
		}
		return true
	})
	require.Equal(t, ids[3:], editedCalls)
	require.JSONEq(t, `{"query":"go"}`, string(msg.Content[1].Input))
	require.JSONEq(t, `{}`, string(msg.Content[4].Input))
	require.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)

	// Remove and reorder at once.
	out, _ = aspRun(t, aspStep{stream: in, remove: []int{0}, first: []int{2, 0}})
	msg, _ = aspAccumulate(t, out)
	ids = ids[:0]
	for _, c := range msg.Content[3:] {
		ids = append(ids, c.ID)
	}
	require.Equal(t, []string{"toolu_3", "toolu_2"}, ids)
}

func TestAnthropicSpliceErrorEvent(t *testing.T) {
	in := aspFixture(t, "splice_tools.sse")
	cut := in[:strings.Index(in, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2")]
	errEv := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	sp := Descriptor.NewSplicer()
	out := aspFeed(t, sp, cut)
	require.False(t, sp.Done())
	require.NotContains(t, string(out), "toolu_A")
	b := aspFeed(t, sp, errEv)
	require.Equal(t, errEv, string(b))
	require.True(t, sp.Done())
	_, err := sp.Reply()
	require.Error(t, err)
	b, err = sp.Release(nil, nil)
	require.NoError(t, err)
	require.Empty(t, b)
	b, err = sp.Finish()
	require.NoError(t, err)
	require.Empty(t, b)
}

func TestAnthropicSpliceMalformed(t *testing.T) {
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"usage\":{}}}\n\n"
	for name, bad := range map[string]string{
		"invalid json":      "event: ping\ndata: {\n\n",
		"not an object":     "data: [1]\n\n",
		"unstarted block":   "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
		"fractional index":  "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1.5,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		"string index":      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":\"0\",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		"duplicate index":   "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		"no content_block":  "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0}\n\n",
		"second start":      start,
		"bad usage":         "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":3}\n\n",
		"bad text delta":    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":1}}\n\n",
		"started twice":     "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		"numeric type name": "data: {\"type\":1}\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			sp := Descriptor.NewSplicer()
			r := rewrite.NewReader(strings.NewReader(start + bad))
			var err error
			for err == nil {
				var ev rewrite.Event
				if ev, err = r.Next(); err == nil {
					_, err = sp.Feed(&ev)
				}
			}
			require.NotErrorIs(t, err, io.EOF)
			require.ErrorIs(t, err, rewrite.ErrMalformedReply)
		})
	}

	// A block before message_start, an out-of-range tool index, calls made
	// twice.
	sp := Descriptor.NewSplicer()
	_, err := sp.Feed(&rewrite.Event{Name: []byte("content_block_start"), Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text"}}`)})
	require.Error(t, err)
	sp = Descriptor.NewSplicer()
	aspFeed(t, sp, aspFixture(t, "splice_tools.sse"))
	_, err = sp.Release([]int{2}, nil)
	require.Error(t, err)
	_, err = sp.Release(nil, []int{1})
	require.NoError(t, err)
	_, err = sp.Release(nil, nil)
	require.Error(t, err)
	_, err = sp.Finish()
	require.NoError(t, err)
	_, err = sp.Finish()
	require.Error(t, err)

	// A cut stream cannot be finished; its Reply rejects a cut tool input.
	sp = Descriptor.NewSplicer()
	in := aspFixture(t, "splice_tools.sse")
	aspFeed(t, sp, in[:strings.Index(in, "event: ping")])
	require.False(t, sp.Done())
	_, err = sp.Reply()
	require.ErrorIs(t, err, rewrite.ErrMalformedReply)
	_, err = sp.Finish()
	require.Error(t, err)
}

func TestAnthropicSpliceEdgeFraming(t *testing.T) {
	// A block event whose data spans two lines is rebuilt; an unterminated
	// last event gets its blank line; a missing message_delta is made up.
	in := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":4}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{}}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\n" +
		"data: \"index\":1,\"content_block\":{\"type\":\"citations\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"citations_delta\",\"citation\":{\"type\":\"char_location\",\"cited_text\":\"c\"}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}"
	sp := Descriptor.NewSplicer()
	out := aspFeed(t, sp, in)
	require.True(t, sp.Done())
	reply, err := sp.Reply()
	require.NoError(t, err)
	require.JSONEq(t, `[{"type":"tool_use","id":"t","name":"n","input":{}},{"type":"citations","text":"hi","citations":[{"type":"char_location","cited_text":"c"}]}]`,
		gjson.GetBytes(reply, "content").Raw)
	b, err := sp.Release([]int{0}, nil)
	require.NoError(t, err)
	require.Empty(t, b)
	b, err = sp.Finish()
	require.NoError(t, err)
	out = append(out, b...)
	require.Contains(t, string(out), "data: {\"type\":\"content_block_start\",\ndata: \"index\":0,")
	require.True(t, strings.HasSuffix(string(out), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	msg, starts := aspAccumulate(t, out)
	require.Equal(t, []int64{0}, starts)
	require.Equal(t, anthropic.StopReasonEndTurn, msg.StopReason)
	require.EqualValues(t, 4, msg.Usage.OutputTokens)
	require.EqualValues(t, 3, msg.Usage.InputTokens)
}

// aspCheckOutput checks the invariants of an agent stream: every data is
// JSON, content blocks start at 0, 1, 2, … and deltas and stops name a
// started block.
func aspCheckOutput(t *testing.T, out []byte) {
	r := rewrite.NewReader(strings.NewReader(string(out)))
	started := 0
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return
		}
		require.NoError(t, err)
		if len(ev.Data) == 0 {
			continue
		}
		require.True(t, json.Valid(ev.Data), "%q", ev.Data)
		var e struct {
			Type  string `json:"type"`
			Index *int64 `json:"index"`
		}
		if json.Unmarshal(ev.Data, &e) != nil {
			continue // valid JSON but not an object of that shape
		}
		typ := e.Type
		if typ == "" {
			typ = string(ev.Name)
		}
		switch typ {
		case "content_block_start":
			require.NotNil(t, e.Index)
			require.EqualValues(t, started, *e.Index, "%q", out)
			started++
		case "content_block_delta", "content_block_stop":
			require.NotNil(t, e.Index)
			require.True(t, *e.Index >= 0 && *e.Index < int64(started), "%q", ev.Data)
		}
	}
}

// aspEvents splits an SSE stream into events (copied).
func aspEvents(s []byte) []rewrite.Event {
	r := rewrite.NewReader(strings.NewReader(string(s)))
	var evs []rewrite.Event
	for {
		ev, err := r.Next()
		if err != nil {
			return evs
		}
		evs = append(evs, rewrite.Event{Name: bytes.Clone(ev.Name), Data: bytes.Clone(ev.Data), Raw: bytes.Clone(ev.Raw), ID: bytes.Clone(ev.ID)})
	}
}

func FuzzAnthropicSplicer(f *testing.F) {
	names := []string{"splice_passthrough", "splice_tools", "splice_followup1", "splice_followup2", "splice_mixed"}
	var streams []string
	for _, n := range names {
		streams = append(streams, aspFixture(f, n+".sse"))
	}
	streams = append(streams, aspFixture(f, "stream.sse"))
	for i, s := range streams {
		f.Add([]byte(s), []byte(nil), []byte{0, 1, 2, 3})
		f.Add([]byte(aspCRLF(s)), []byte(streams[(i+1)%len(streams)]), []byte{1, 2, 1, 0, 3})
		f.Add([]byte(s[:len(s)/2]), []byte(s), []byte{3, 3, 3})
		mix := []byte{0x80}
		for j := 0; j < 40; j++ {
			mix = append(mix, byte(j*7%23))
		}
		f.Add([]byte(s), []byte(nil), mix)
	}
	f.Fuzz(func(t *testing.T, s1, s2, choice []byte) {
		sp := Descriptor.NewSplicer()
		var out []byte
		ok := true
		for i, s := range [][]byte{s1, s2} {
			if i == 1 {
				if len(s2) == 0 {
					break
				}
				sp.Next()
			}
			evs := aspEvents(s)
			if i == 0 && len(choice) > 1 && choice[0]&0x80 != 0 && len(evs) > 0 {
				// Rearrange whole events: drop, repeat and reorder them.
				var mixed []rewrite.Event
				for _, c := range choice[1:] {
					mixed = append(mixed, evs[int(c)%len(evs)])
				}
				evs = mixed
			}
			for _, ev := range evs {
				b, err := sp.Feed(&ev)
				if err != nil {
					ok = false
					break
				}
				out = append(out, b...)
			}
			if !ok {
				return
			}
			if reply, err := sp.Reply(); err == nil {
				require.True(t, json.Valid(reply), "%q", reply)
				_, err := apitest.CodecFor(Descriptor).ParseReply(reply)
				require.NoError(t, err)
			}
			// Pick remove/first among the stream's calls; a byte >= 0xf0 asks
			// for an out-of-range index.
			calls := 0
			if as, okAs := sp.(*anthropicSplicer); okAs {
				for _, b := range as.blocks {
					if b.state == asHeld {
						calls++
					}
				}
			}
			var remove, first []int
			for j, c := range choice {
				switch {
				case c >= 0xf0:
					remove = append(remove, calls+j)
				case c&1 != 0 && j < calls:
					remove = append(remove, j)
				case c&2 != 0 && j < calls:
					first = append([]int{j}, first...)
				}
			}
			b, err := sp.Release(remove, first)
			if err != nil {
				if !errors.Is(err, rewrite.ErrMalformedReply) {
					require.Contains(t, err.Error(), "out of range")
				}
				return
			}
			out = append(out, b...)
		}
		b, err := sp.Finish()
		if err == nil {
			out = append(out, b...)
		}
		aspCheckOutput(t, out)
		require.Equal(t, aspCount(t, out), sp.Events())
	})
}
