package anthropic

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	anthropic "github.com/anthropics/anthropic-sdk-go"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

var anthCC = func() rewrite.ContinueCodec {
	cc, ok := rewrite.Continuer(apitest.CodecFor(Descriptor))
	if !ok {
		panic("anthropic codec has no ContinueCodec")
	}
	return cc
}()

// acMock renders r as the mock provider's Anthropic reply: an SSE stream
// (text in deltas of chunk runes) or, without stream, the JSON body.
func acMock(t testing.TB, r mock.Reply, stream bool, chunk int) string {
	t.Helper()
	srv := mock.New(mock.Options{ChunkSize: chunk})
	srv.Script(r)
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/messages")
	ctx.Request.SetBodyString(`{"model":"claude-test","max_tokens":64,"stream":` + strconv.FormatBool(stream) +
		`,"messages":[{"role":"user","content":"hi"}]}`)
	srv.Handler()(&ctx)
	require.Equal(t, 200, ctx.Response.StatusCode())
	return string(ctx.Response.Body())
}

// Hand-written events.

func acEv(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

func acMsgStart(id string, in int) string {
	return acEv("message_start", `{"type":"message_start","message":{"id":"`+id+`","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`+strconv.Itoa(in)+`,"output_tokens":1}}}`)
}

func acStart(i int, block string) string {
	return acEv("content_block_start", `{"type":"content_block_start","index":`+strconv.Itoa(i)+`,"content_block":`+block+`}`)
}

func acDelta(i int, typ, field, val string) string {
	return acEv("content_block_delta", `{"type":"content_block_delta","index":`+strconv.Itoa(i)+`,"delta":{"type":"`+typ+`","`+field+`":`+string(jsonkit.Quote(val))+`}}`)
}

func acText(i int, text string) string { return acDelta(i, "text_delta", "text", text) }

func acStop(i int) string {
	return acEv("content_block_stop", `{"type":"content_block_stop","index":`+strconv.Itoa(i)+`}`)
}

func acThinking(i int, text, sig string) string {
	return acStart(i, `{"type":"thinking","thinking":"","signature":""}`) + acDelta(i, "thinking_delta", "thinking", text) +
		acDelta(i, "signature_delta", "signature", sig) + acStop(i)
}

func acTextBlock(i int, texts ...string) string {
	out := acStart(i, `{"type":"text","text":""}`)
	for _, t := range texts {
		out += acText(i, t)
	}
	return out + acStop(i)
}

func acToolBlock(i int, id, input string) string {
	return acStart(i, `{"type":"tool_use","id":"`+id+`","name":"write_file","input":{}}`) +
		acDelta(i, "input_json_delta", "partial_json", input) + acStop(i)
}

func acMsgDelta(stop string, usage string) string {
	return acEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":`+usage+`}`)
}

const (
	acMsgStop = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	acPing    = "event: ping\ndata: {\"type\": \"ping\"}\n\n"
)

// acOp is one upstream stream of a turn: how it is spliced in (first, next
// or cont) and the engine's Release.
type acOp struct {
	how           string // "first", "next", "cont"
	stream        string
	remove, first []int
}

// acRun runs a turn, checking that Reply of each stream is that stream's
// own reply, and returns the agent's bytes, the bytes written per stream
// (Feed and Release, then Finish last) and each stream's reply.
func acRun(t testing.TB, ops ...acOp) (out []byte, parts []string, replies [][]byte) {
	t.Helper()
	sp := Descriptor.NewSplicer()
	cs, ok := sp.(rewrite.ContinueSplicer)
	require.True(t, ok)
	for _, op := range ops {
		switch op.how {
		case "next":
			sp.Next()
		case "cont":
			cs.Continue()
		}
		part := aspFeed(t, sp, op.stream)
		require.True(t, sp.Done())
		reply, err := sp.Reply()
		require.NoError(t, err)
		replies = append(replies, reply)
		b, err := sp.Release(op.remove, op.first)
		require.NoError(t, err)
		part = append(part, b...)
		parts = append(parts, string(part))
		out = append(out, part...)
	}
	b, err := sp.Finish()
	require.NoError(t, err)
	parts = append(parts, string(b))
	out = append(out, b...)
	require.Equal(t, aspCount(t, out), sp.Events())
	acCheckStream(t, out)
	return out, parts, replies
}

// acCheckStream checks what an SDK client relies on beyond
// aspAccumulate's order checks: blocks start at 0, 1, 2, … and stop once,
// deltas come between a block's start and stop, and no text delta is
// empty.
func acCheckStream(t testing.TB, out []byte) {
	t.Helper()
	open := map[int64]bool{}
	next := int64(0)
	for _, ev := range aspEvents(out) {
		if len(ev.Data) == 0 {
			continue
		}
		idx := gjson.GetBytes(ev.Data, "index").Int()
		switch gjson.GetBytes(ev.Data, "type").Str {
		case "content_block_start":
			require.Equal(t, next, idx, "%s", out)
			open[idx] = true
			next++
		case "content_block_delta":
			require.True(t, open[idx], "delta of a closed block: %s", ev.Data)
			if d := gjson.GetBytes(ev.Data, "delta"); d.Get("type").Str == "text_delta" {
				require.NotEmpty(t, d.Get("text").Str, "empty text delta")
			}
		case "content_block_stop":
			require.True(t, open[idx], "stop of a closed block: %s", ev.Data)
			open[idx] = false
		case "message_delta", "message_stop":
			for i, o := range open {
				require.False(t, o, "block %d still open at %s", i, ev.Name)
			}
		}
	}
}

// acTypes lists the accumulated message's block types.
func acTypes(m anthropic.Message) []string {
	var types []string
	for _, c := range m.Content {
		types = append(types, c.Type)
	}
	return types
}

func TestAnthropicContinuationMessages(t *testing.T) {
	const thinking = `{"type":"thinking","thinking":"Plan \"it\"\u00e9","signature":"EqSIG=="}`
	reply := func(content ...string) []byte {
		return []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[` + strings.Join(content, ",") +
			`],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":9}}`)
	}
	cut := `{"type":"tool_use","id":"toolu_1","name":"write_file","input":{}}`
	for _, tc := range []struct {
		name    string
		reply   []byte
		prefill bool
		want    string // "" when hasText is false
	}{
		{name: "tool call dropped", reply: reply(thinking, `{"type":"text","text":"Writing \u00e9 now. "}`, cut),
			want: `{"role":"assistant","content":[` + thinking + `,{"type":"text","text":"Writing \u00e9 now. "}]}`},
		{name: "prefill trims the last text", reply: reply(thinking, `{"type":"text","text":"Writing \u00e9 now. \n"}`, cut), prefill: true,
			want: `{"role":"assistant","content":[` + thinking + `,{"type":"text","text":"Writing é now."}]}`},
		{name: "prefill without trailing space keeps the bytes", reply: reply(thinking, `{"type":"text","text":"a \u00e9"}`), prefill: true,
			want: `{"role":"assistant","content":[` + thinking + `,{"type":"text","text":"a \u00e9"}]}`},
		{name: "prefill drops a blank last text and what follows the text", prefill: true,
			reply: reply(`{"type":"text","text":"First.  "}`, cut, thinking, `{"type":"text","text":" \n "}`),
			want:  `{"role":"assistant","content":[{"type":"text","text":"First."}]}`},
		{name: "blank texts dropped without prefill",
			reply: reply(`{"type":"text","text":""}`, `{"type":"text","text":"First.  "}`, thinking, `{"type":"text","text":" "}`, cut),
			want:  `{"role":"assistant","content":[{"type":"text","text":"First.  "},` + thinking + `]}`},
		{name: "citations and server blocks kept",
			reply: reply(`{"type":"server_tool_use","id":"srv","name":"web_search","input":{"q":"x"}}`,
				`{"type":"text","text":"Per the docs","citations":[{"type":"char_location","cited_text":"c"}]}`),
			want: `{"role":"assistant","content":[{"type":"server_tool_use","id":"srv","name":"web_search","input":{"q":"x"}},{"type":"text","text":"Per the docs","citations":[{"type":"char_location","cited_text":"c"}]}]}`},
		{name: "only a truncated call", reply: reply(cut)},
		{name: "only a truncated call, prefill", reply: reply(cut), prefill: true},
		{name: "thinking and a truncated call", reply: reply(thinking, cut)},
		{name: "blank text and a truncated call", reply: reply(`{"type":"text","text":"\n"}`, cut), prefill: true},
		{name: "empty", reply: reply()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := string(tc.reply)
			items, hasText, err := anthCC.ContinuationMessages(tc.reply, tc.prefill)
			require.NoError(t, err)
			require.Equal(t, orig, string(tc.reply), "input modified")
			if tc.want == "" {
				require.False(t, hasText)
				require.Nil(t, items)
				return
			}
			require.True(t, hasText)
			require.Len(t, items, 1)
			require.Equal(t, tc.want, string(items[0]))
			// The item makes a request the codec accepts.
			body, err := anthTC.AppendMessages([]byte(anBody(anU0)), items)
			require.NoError(t, err)
			view, err := apitest.CodecFor(Descriptor).ParseRequest(body)
			require.NoError(t, err)
			require.Len(t, view.Messages, 2)
		})
	}

	// A mock reply: thinking and text byte for byte, the call gone.
	r := mock.Reply{ID: "msg_m", Text: "Half of the answer ", Stop: "max_tokens",
		Thinking:  &mock.Thinking{Text: "hmm", Signature: "SIG"},
		ToolCalls: []mock.ToolCall{{ID: "toolu_x", Name: "write_file", Args: `{"path":"a.go"}`}}}
	body := []byte(acMock(t, r, false, 0))
	items, hasText, err := anthCC.ContinuationMessages(body, false)
	require.NoError(t, err)
	require.True(t, hasText)
	require.Equal(t, `{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"SIG"},{"type":"text","text":"Half of the answer "}]}`, string(items[0]))
	items, _, err = anthCC.ContinuationMessages(body, true)
	require.NoError(t, err)
	require.Equal(t, `{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"SIG"},{"type":"text","text":"Half of the answer"}]}`, string(items[0]))

	// Pretty-printed content keeps its layout.
	pretty := []byte("{\"content\": [\n  {\"type\": \"text\", \"text\": \"a\"},\n  {\"type\": \"tool_use\", \"id\": \"t\", \"name\": \"n\", \"input\": {}}\n]}")
	items, _, err = anthCC.ContinuationMessages(pretty, false)
	require.NoError(t, err)
	require.Equal(t, "{\"role\":\"assistant\",\"content\":[\n  {\"type\": \"text\", \"text\": \"a\"}\n]}", string(items[0]))

	for _, bad := range []string{`{`, `[]`, `{"content":{}}`, `{"content":[{"type":"text","text":3}]}`} {
		_, _, err := anthCC.ContinuationMessages([]byte(bad), true)
		require.ErrorIs(t, err, rewrite.ErrMalformedReply, bad)
	}
}

func TestAnthropicUserTextMessage(t *testing.T) {
	item, err := anthCC.UserTextMessage("Continue \"exactly\"\n<here>")
	require.NoError(t, err)
	require.Equal(t, `{"role":"user","content":[{"type":"text","text":"Continue \"exactly\"\n<here>"}]}`, string(item))
	body, err := anthTC.AppendMessages([]byte(anBody(anU0, anA3)), [][]byte{item})
	require.NoError(t, err)
	view, err := apitest.CodecFor(Descriptor).ParseRequest(body)
	require.NoError(t, err)
	require.Len(t, view.Messages, 3)
	_, err = anthCC.UserTextMessage(" \n")
	require.Error(t, err)
}

func TestAnthropicContinueReply(t *testing.T) {
	acc := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[` +
		`{"type":"thinking","thinking":"t","signature":"S1"},{"type":"text","text":"The quick \u00e9 brown fox jumps"}` +
		`],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":10,"cache_read_input_tokens":100,"output_tokens":30}}`
	next := func(content ...string) string {
		return `{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[` + strings.Join(content, ",") +
			`],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":50,"cache_read_input_tokens":120,"output_tokens":12}}`
	}
	tail := `,"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":50,"cache_read_input_tokens":120,"output_tokens":42}}`
	head := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"t","signature":"S1"},`
	call := `{"type":"tool_use","id":"toolu_2","name":"write_file","input":{"path":"a"}}`
	for _, tc := range []struct {
		name, acc, next, want string
	}{
		{name: "seam, thinking dropped, call kept", acc: acc,
			next: next(`{"type":"thinking","thinking":"again","signature":"S2"}`, `{"type":"text","text":"fox jumps over the lazy dog."}`, call),
			want: head + `{"type":"text","text":"The quick \u00e9 brown fox jumps over the lazy dog."},` + call + `]` + tail},
		{name: "whitespace seam", acc: strings.Replace(acc, `fox jumps"`, `fox jumps "`, 1),
			next: next(`{"type":"text","text":"  over"}`),
			want: head + `{"type":"text","text":"The quick \u00e9 brown fox jumps over"}]` + tail},
		{name: "no overlap", acc: acc, next: next(`{"type":"text","text":", then sits."}`),
			want: head + `{"type":"text","text":"The quick \u00e9 brown fox jumps, then sits."}]` + tail},
		{name: "everything repeated", acc: acc, next: next(`{"type":"text","text":"brown fox jumps"}`, call),
			want: head + `{"type":"text","text":"The quick \u00e9 brown fox jumps"},` + call + `]` + tail},
		{name: "only a call", acc: acc, next: next(`{"type":"redacted_thinking","data":"R"}`, call),
			want: head + `{"type":"text","text":"The quick \u00e9 brown fox jumps"},` + call + `]` + tail},
		{name: "call before the text", acc: acc, next: next(call, `{"type":"text","text":"fox jumps again"}`),
			want: head + `{"type":"text","text":"The quick \u00e9 brown fox jumps"},` + call + `,{"type":"text","text":"fox jumps again"}]` + tail},
		{name: "second text kept", acc: acc, next: next(`{"type":"text","text":" over"}`, call, `{"type":"text","text":"Done."}`),
			want: head + `{"type":"text","text":"The quick \u00e9 brown fox jumps over"},` + call + `,{"type":"text","text":"Done."}]` + tail},
		{name: "acc ends with a call", acc: strings.Replace(acc, `fox jumps"}`, `fox jumps"},{"type":"tool_use","id":"t1","name":"n","input":{}}`, 1),
			next: next(`{"type":"text","text":"fox jumps over"}`),
			want: head + `{"type":"text","text":"The quick \u00e9 brown fox jumps"},{"type":"tool_use","id":"t1","name":"n","input":{}},{"type":"text","text":"fox jumps over"}]` + tail},
		{name: "acc without text", acc: strings.Replace(acc, `,{"type":"text","text":"The quick \u00e9 brown fox jumps"}`, ``, 1),
			next: next(`{"type":"thinking","thinking":"x","signature":"S"}`, `{"type":"text","text":"Hello"}`),
			want: head[:len(head)-1] + `,{"type":"text","text":"Hello"}]` + tail},
		{name: "empty acc content", acc: strings.Replace(acc, `{"type":"thinking","thinking":"t","signature":"S1"},{"type":"text","text":"The quick \u00e9 brown fox jumps"}`, ``, 1),
			next: next(`{"type":"text","text":"Hello"}`),
			want: `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hello"}]` + tail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, n := []byte(tc.acc), []byte(tc.next)
			got, err := anthCC.ContinueReply(a, n)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
			require.Equal(t, tc.acc, string(a))
			require.Equal(t, tc.next, string(n))
			_, err = apitest.CodecFor(Descriptor).ParseReply(got)
			require.NoError(t, err)
		})
	}

	// Without usage or stop in next, acc's stay.
	got, err := anthCC.ContinueReply([]byte(acc), []byte(`{"content":[{"type":"text","text":" over"}]}`))
	require.NoError(t, err)
	require.Equal(t, strings.Replace(acc, `fox jumps"`, `fox jumps over"`, 1), string(got))
	got, err = anthCC.ContinueReply([]byte(acc), []byte(`{"content":null}`))
	require.NoError(t, err)
	require.Equal(t, acc, string(got))

	for _, bad := range [][2]string{{`{`, `{}`}, {`{}`, `{"content":[]}`}, {acc, `{"content":{}}`}, {acc, `[]`},
		{acc, `{"content":[{"type":"text","text":1}]}`}} {
		_, err := anthCC.ContinueReply([]byte(bad[0]), []byte(bad[1]))
		require.ErrorIs(t, err, rewrite.ErrMalformedReply, bad)
	}
}

func TestAnthropicSpliceHoldsLastTextClose(t *testing.T) {
	// A non-truncated stream: the text block's stop (and the ping after it)
	// are written at Finish, in the upstream's order.
	in := acMsgStart("msg_1", 10) + acThinking(0, "hmm", "S") + acTextBlock(1, "Hello", " world") + acPing +
		": comment\n\n" + acMsgDelta("end_turn", `{"output_tokens":9}`) + acMsgStop
	for _, crlf := range []bool{false, true} {
		src := in
		if crlf {
			src = aspCRLF(in)
		}
		sp := Descriptor.NewSplicer()
		var out []byte
		for _, ev := range aspEvents([]byte(src)) {
			b, err := sp.Feed(&ev)
			require.NoError(t, err)
			if gjson.GetBytes(ev.Data, "type").Str == "content_block_stop" && gjson.GetBytes(ev.Data, "index").Int() == 1 ||
				string(ev.Name) == "ping" || len(ev.Data) == 0 {
				require.Empty(t, b)
			}
			out = append(out, b...)
		}
		b, err := sp.Release(nil, nil)
		require.NoError(t, err)
		require.Empty(t, b)
		fin, err := sp.Finish()
		require.NoError(t, err)
		want := acStop(1) + acPing + ": comment\n\n" + acMsgDelta("end_turn", `{"output_tokens":9}`) + acMsgStop
		if crlf {
			want = aspCRLF(want)
		}
		require.Equal(t, want, string(fin))
		require.Equal(t, src, string(out)+string(fin))
	}

	// Another block after the text closes it at once.
	in = acMsgStart("msg_1", 10) + acTextBlock(0, "Hi") + acPing + acStart(1, `{"type":"redacted_thinking","data":"R"}`) + acStop(1) +
		acTextBlock(2, "there") + acToolBlock(3, "t1", `{}`) + acMsgDelta("tool_use", `{"output_tokens":9}`) + acMsgStop
	sp := Descriptor.NewSplicer()
	var parts []string
	for _, ev := range aspEvents([]byte(in)) {
		b, err := sp.Feed(&ev)
		require.NoError(t, err)
		parts = append(parts, string(b))
	}
	require.Equal(t, acStop(0)+acPing+acStart(1, `{"type":"redacted_thinking","data":"R"}`), parts[5])
	require.Equal(t, acStop(2), parts[10]) // at the tool_use start
	b, err := sp.Release(nil, nil)
	require.NoError(t, err)
	fin, err := sp.Finish()
	require.NoError(t, err)
	require.Equal(t, in, strings.Join(parts, "")+string(b)+string(fin))
}

func TestAnthropicSpliceContinue(t *testing.T) {
	s1 := acMsgStart("msg_1", 10) + acThinking(0, "plan", "S1") + acTextBlock(1, "The quick brown ", "fox jumps") +
		acMsgDelta("max_tokens", `{"output_tokens":30}`) + acMsgStop
	s2 := acMsgStart("msg_2", 50) + acPing + acThinking(0, "again", "S2") + acTextBlock(1, "fox jumps over", " the lazy dog.") +
		acToolBlock(2, "toolu_2", `{"path":"a"}`) + acMsgDelta("tool_use", `{"output_tokens":12}`) + acMsgStop
	for _, crlf := range []bool{false, true} {
		t.Run("crlf="+strconv.FormatBool(crlf), func(t *testing.T) {
			a, b := s1, s2
			conv := func(s string) string { return s }
			if crlf {
				a, b, conv = aspCRLF(a), aspCRLF(b), aspCRLF
			}
			out, parts, replies := acRun(t, acOp{how: "first", stream: a}, acOp{how: "cont", stream: b})

			// Event by event: stream 1 without its text's stop; the
			// continuation's text, de-duplicated, as one delta of block 1
			// (the filter held it all until the block ended); the held
			// stop and ping before the call; one terminal sequence.
			require.Equal(t, conv(acMsgStart("msg_1", 10)+acThinking(0, "plan", "S1")+acStart(1, `{"type":"text","text":""}`)+
				acText(1, "The quick brown ")+acText(1, "fox jumps")), parts[0])
			require.Equal(t, conv(acText(1, " over the lazy dog.")+acStop(1)+acPing+acToolBlock(2, "toolu_2", `{"path":"a"}`)), parts[1])
			require.Equal(t, conv(acEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":50,"output_tokens":42}}`)+acMsgStop), parts[2])

			msg, starts := aspAccumulate(t, out)
			require.Equal(t, []int64{0, 1, 2}, starts)
			require.Equal(t, "msg_1", msg.ID)
			require.Equal(t, []string{"thinking", "text", "tool_use"}, acTypes(msg))
			require.Equal(t, "The quick brown fox jumps over the lazy dog.", msg.Content[1].Text)
			require.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
			require.EqualValues(t, 42, msg.Usage.OutputTokens)
			require.EqualValues(t, 50, msg.Usage.InputTokens)

			// Each stream's Reply is its own.
			require.Equal(t, `[{"type":"thinking","thinking":"again","signature":"S2"},{"type":"text","text":"fox jumps over the lazy dog."},{"type":"tool_use","id":"toolu_2","name":"write_file","input":{"path":"a"}}]`,
				gjson.GetBytes(replies[1], "content").Raw)
			require.Equal(t, "msg_2", gjson.GetBytes(replies[1], "id").Str)

			// The non-streaming engine's copy is the same.
			merged, err := anthCC.ContinueReply(replies[0], replies[1])
			require.NoError(t, err)
			require.JSONEq(t, gjson.GetBytes(merged, "content").Raw, aspContent(t, msg))
			require.Equal(t, gjson.GetBytes(merged, "usage.output_tokens").Int(), msg.Usage.OutputTokens)
		})
	}

	// The continuation removes the call: stop becomes end_turn.
	out, _, _ := acRun(t, acOp{how: "first", stream: s1}, acOp{how: "cont", stream: s2, remove: []int{0}})
	msg, _ := aspAccumulate(t, out)
	require.Equal(t, []string{"thinking", "text"}, acTypes(msg))
	require.Equal(t, anthropic.StopReasonEndTurn, msg.StopReason)
	require.True(t, strings.HasSuffix(string(out), acText(1, " over the lazy dog.")+acStop(1)+acPing+
		acEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":50,"output_tokens":42}}`)+acMsgStop))
}

func TestAnthropicSpliceContinueLongSeam(t *testing.T) {
	// Mock streams; continuations longer than the seam window, repeating
	// the partial text's last words, in one, two or three streams.
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega")
	text := func(n, from int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "%s%d ", words[(from+i)%len(words)], from+i)
		}
		return b.String()
	}
	partial := text(40, 0) + "ένα"                              // ends mid-word, multi-byte
	cont1 := partial[len(partial)-30:] + " δύο " + text(60, 40) // repeats 30 bytes
	cont2 := text(70, 100)                                      // no overlap
	for _, chunk := range []int{1, 5, 16, -1} {
		t.Run("chunk="+strconv.Itoa(chunk), func(t *testing.T) {
			r1 := mock.Reply{ID: "msg_a", Text: partial, Stop: "max_tokens", Thinking: &mock.Thinking{Text: "think", Signature: "S"},
				Usage: mock.Usage{Input: 10, Output: 100}}
			r2 := mock.Reply{ID: "msg_b", Text: cont1, Stop: "max_tokens", Thinking: &mock.Thinking{Text: "more", Signature: "T"},
				Usage: mock.Usage{Input: 20, Output: 200}}
			r3 := mock.Reply{ID: "msg_c", Text: cont2, Usage: mock.Usage{Input: 30, Output: 50, CacheRead: 7}}
			s1, s2, s3 := acMock(t, r1, true, chunk), acMock(t, r2, true, chunk), acMock(t, r3, true, chunk)

			out, _, replies := acRun(t, acOp{how: "first", stream: s1}, acOp{how: "cont", stream: s2})
			msg, starts := aspAccumulate(t, out)
			require.Equal(t, []int64{0, 1}, starts)
			want := partial + rewrite.TrimSeam(partial, cont1)
			require.Equal(t, partial+" δύο "+text(60, 40), want)
			require.Equal(t, want, msg.Content[1].Text)
			require.Equal(t, anthropic.StopReasonMaxTokens, msg.StopReason)
			require.EqualValues(t, 300, msg.Usage.OutputTokens)
			require.Equal(t, 1, strings.Count(string(out), "event: message_stop"))
			// Reply of the continuation is the mock's non-streaming body.
			require.JSONEq(t, acMock(t, r2, false, chunk), string(replies[1]))

			out, _, replies = acRun(t, acOp{how: "first", stream: s1}, acOp{how: "cont", stream: s2}, acOp{how: "cont", stream: s3})
			msg, starts = aspAccumulate(t, out)
			require.Equal(t, []int64{0, 1}, starts)
			want2 := want + rewrite.TrimSeam(want, cont2)
			require.Equal(t, want2, msg.Content[1].Text)
			require.Equal(t, "think", msg.Content[0].Thinking)
			require.Equal(t, anthropic.StopReasonEndTurn, msg.StopReason)
			require.EqualValues(t, 350, msg.Usage.OutputTokens)
			require.EqualValues(t, 30, msg.Usage.InputTokens)
			require.EqualValues(t, 7, msg.Usage.CacheReadInputTokens)
			require.Equal(t, "msg_a", msg.ID)

			merged, err := anthCC.ContinueReply(replies[0], replies[1])
			require.NoError(t, err)
			merged, err = anthCC.ContinueReply(merged, replies[2])
			require.NoError(t, err)
			require.JSONEq(t, gjson.GetBytes(merged, "content").Raw, aspContent(t, msg))
			require.Equal(t, "end_turn", gjson.GetBytes(merged, "stop_reason").Str)
		})
	}
}

func TestAnthropicSpliceContinueThinkingAndCall(t *testing.T) {
	// The continuation thinks (dropped), continues the text and makes a
	// call, held until Release.
	r1 := mock.Reply{ID: "msg_a", Text: "I will now create the file named main.go", Stop: "max_tokens", Usage: mock.Usage{Input: 5, Output: 11}}
	r2 := mock.Reply{ID: "msg_b", Text: "named main.go with the handler.", Thinking: &mock.Thinking{Text: "where was I", Signature: "SIG"},
		ToolCalls: []mock.ToolCall{{ID: "toolu_w", Name: "write_file", Args: `{"path":"main.go"}`}}, Usage: mock.Usage{Input: 9, Output: 22}}
	s1, s2 := acMock(t, r1, true, 4), acMock(t, r2, true, 4)

	sp := Descriptor.NewSplicer()
	out := aspFeed(t, sp, s1)
	b, err := sp.Release(nil, nil)
	require.NoError(t, err)
	require.Empty(t, b)
	sp.(rewrite.ContinueSplicer).Continue()
	part := aspFeed(t, sp, s2)
	require.NotContains(t, string(part), "where was I")
	require.NotContains(t, string(part), "toolu_w")
	require.NotContains(t, string(part), "content_block_start")
	// The call's start closed the text block.
	require.True(t, strings.HasSuffix(string(part), acText(0, " with the handler.")+acStop(0)), "%q", part)
	reply, err := sp.Reply()
	require.NoError(t, err)
	require.JSONEq(t, acMock(t, r2, false, 4), string(reply))
	rel, err := sp.Release(nil, nil)
	require.NoError(t, err)
	require.Equal(t, acStart(1, `{"type":"tool_use","id":"toolu_w","name":"write_file","input":{}}`)+
		acDelta(1, "input_json_delta", "partial_json", "")+acDelta(1, "input_json_delta", "partial_json", `{"pa`)+
		acDelta(1, "input_json_delta", "partial_json", `th":`)+acDelta(1, "input_json_delta", "partial_json", `"mai`)+
		acDelta(1, "input_json_delta", "partial_json", `n.go`)+acDelta(1, "input_json_delta", "partial_json", `"}`)+acStop(1), string(rel))
	fin, err := sp.Finish()
	require.NoError(t, err)
	out = append(append(append(out, part...), rel...), fin...)
	acCheckStream(t, out)
	msg, starts := aspAccumulate(t, out)
	require.Equal(t, []int64{0, 1}, starts)
	require.Equal(t, []string{"text", "tool_use"}, acTypes(msg))
	require.Equal(t, "I will now create the file named main.go with the handler.", msg.Content[0].Text)
	require.JSONEq(t, `{"path":"main.go"}`, string(msg.Content[1].Input))
	require.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
	require.EqualValues(t, 33, msg.Usage.OutputTokens)
	require.Equal(t, aspCount(t, out), sp.Events())
}

func TestAnthropicSpliceContinueAfterCutCall(t *testing.T) {
	// The reply is cut inside a tool call (its input never completes): Reply
	// still works (input {}), the engine removes the call, and the
	// continuation's text opens a new block after the closed one.
	r1 := mock.Reply{ID: "msg_a", Text: "Writing the file.", Stop: "max_tokens", Usage: mock.Usage{Input: 5, Output: 64},
		ToolCalls: []mock.ToolCall{{ID: "toolu_cut", Name: "write_file", Args: `{"path":"main.go","content":"package main"}`}}}
	s1 := acMock(t, r1, true, 8)
	evs := aspEvents([]byte(s1))
	var cut strings.Builder
	deltas := 0
	for _, ev := range evs {
		if strings.Contains(string(ev.Data), "input_json_delta") {
			if deltas++; deltas > 3 {
				continue // the rest of the input never came
			}
		}
		cut.Write(ev.Raw)
	}
	r2 := mock.Reply{ID: "msg_b", Text: "Writing the file now.", Usage: mock.Usage{Input: 9, Output: 20},
		ToolCalls: []mock.ToolCall{{ID: "toolu_new", Name: "write_file", Args: `{"path":"main.go"}`}}}
	s2 := acMock(t, r2, true, 8)

	out, parts, replies := acRun(t, acOp{how: "first", stream: cut.String(), remove: []int{0}}, acOp{how: "cont", stream: s2})
	require.Equal(t, `[{"type":"text","text":"Writing the file."},{"type":"tool_use","id":"toolu_cut","name":"write_file","input":{}}]`,
		gjson.GetBytes(replies[0], "content").Raw)
	view, err := apitest.CodecFor(Descriptor).ParseReply(replies[0])
	require.NoError(t, err)
	require.Len(t, view.ToolCalls, 1)
	require.NotContains(t, string(out), "toolu_cut")
	require.True(t, strings.HasSuffix(parts[0], acStop(0)), "the tool_use start closed the text")
	msg, starts := aspAccumulate(t, out)
	require.Equal(t, []int64{0, 1, 2}, starts)
	require.Equal(t, []string{"text", "text", "tool_use"}, acTypes(msg))
	require.Equal(t, "Writing the file.", msg.Content[0].Text)
	require.Equal(t, "Writing the file now.", msg.Content[1].Text)
	require.Equal(t, "toolu_new", msg.Content[2].ID)
	require.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
	require.EqualValues(t, 84, msg.Usage.OutputTokens)

	// Without an open text block at all (the reply was only thinking), the
	// continuation's text opens a new block too.
	s1 = acMsgStart("msg_1", 10) + acThinking(0, "long thought", "S") + acMsgDelta("max_tokens", `{"output_tokens":30}`) + acMsgStop
	s2 = acMsgStart("msg_2", 10) + acThinking(0, "more", "T") + acTextBlock(1, "Answer.") + acMsgDelta("end_turn", `{"output_tokens":5}`) + acMsgStop
	out, parts, _ = acRun(t, acOp{how: "first", stream: s1}, acOp{how: "cont", stream: s2})
	require.Equal(t, acStart(1, `{"type":"text","text":""}`)+acText(1, "Answer."), parts[1])
	require.True(t, strings.HasPrefix(parts[2], acStop(1)))
	msg, _ = aspAccumulate(t, out)
	require.Equal(t, []string{"thinking", "text"}, acTypes(msg))
	require.Equal(t, "long thought", msg.Content[0].Thinking)
}

func TestAnthropicSpliceContinueEdges(t *testing.T) {
	s1 := acMsgStart("msg_1", 10) + acTextBlock(0, "Some partial sentence that") + acPing + acMsgDelta("max_tokens", `{"output_tokens":30}`) + acMsgStop

	t.Run("continuation text in the start event", func(t *testing.T) {
		s2 := acMsgStart("msg_2", 10) + acStart(0, `{"type":"text","text":"partial sentence that goes"}`) + acText(0, " on.") + acStop(0) +
			acMsgDelta("end_turn", `{"output_tokens":5}`) + acMsgStop
		out, parts, replies := acRun(t, acOp{how: "first", stream: s1}, acOp{how: "cont", stream: s2})
		require.Equal(t, acPing+acText(0, " goes on."), parts[1])
		msg, _ := aspAccumulate(t, out)
		require.Equal(t, "Some partial sentence that goes on.", msg.Content[0].Text)
		require.Equal(t, `[{"type":"text","text":"partial sentence that goes on."}]`, gjson.GetBytes(replies[1], "content").Raw)
	})

	t.Run("continuation only repeats", func(t *testing.T) {
		s2 := acMsgStart("msg_2", 10) + acTextBlock(0, "partial ", "sentence that") + acToolBlock(1, "t", `{}`) +
			acMsgDelta("tool_use", `{"output_tokens":5}`) + acMsgStop
		out, parts, _ := acRun(t, acOp{how: "first", stream: s1}, acOp{how: "cont", stream: s2})
		require.Equal(t, acPing+acStop(0)+acToolBlock(1, "t", `{}`), parts[1])
		msg, _ := aspAccumulate(t, out)
		require.Equal(t, "Some partial sentence that", msg.Content[0].Text)
	})

	t.Run("error in the continuation", func(t *testing.T) {
		errEv := acEv("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		s2 := acMsgStart("msg_2", 10) + acStart(0, `{"type":"text","text":""}`) + acText(0, " goes") + errEv
		sp := Descriptor.NewSplicer()
		out := aspFeed(t, sp, s1)
		_, err := sp.Release(nil, nil)
		require.NoError(t, err)
		sp.(rewrite.ContinueSplicer).Continue()
		part := aspFeed(t, sp, s2)
		require.Equal(t, acPing+acText(0, " goes")+acStop(0)+errEv, string(part))
		require.True(t, sp.Done())
		_, err = sp.Reply()
		require.Error(t, err)
		fin, err := sp.Finish()
		require.NoError(t, err)
		require.Empty(t, fin)
		require.Equal(t, aspCount(t, append(out, part...)), sp.Events())
	})

	t.Run("follow-up after a held close", func(t *testing.T) {
		// A call answered by shepherd, then text: the text's stop is written
		// before the follow-up's first event.
		a := acMsgStart("msg_1", 10) + acToolBlock(0, "t", `{}`) + acTextBlock(1, "Made it.") + acMsgDelta("tool_use", `{"output_tokens":3}`) + acMsgStop
		b := acMsgStart("msg_2", 10) + acPing + acTextBlock(0, "Done.") + acMsgDelta("end_turn", `{"output_tokens":2}`) + acMsgStop
		out, parts, _ := acRun(t, acOp{how: "first", stream: a, remove: []int{0}}, acOp{how: "next", stream: b})
		require.Equal(t, acMsgStart("msg_1", 10)+acStart(0, `{"type":"text","text":""}`)+acText(0, "Made it."), parts[0])
		require.Equal(t, acStop(0)+acPing+acStart(1, `{"type":"text","text":""}`)+acText(1, "Done."), parts[1])
		msg, _ := aspAccumulate(t, out)
		require.Equal(t, []string{"text", "text"}, acTypes(msg))
	})

	t.Run("continuation then follow-up", func(t *testing.T) {
		s2 := acMsgStart("msg_2", 10) + acTextBlock(0, " goes on.") + acToolBlock(1, "t", `{}`) + acMsgDelta("tool_use", `{"output_tokens":5}`) + acMsgStop
		s3 := acMsgStart("msg_3", 10) + acTextBlock(0, "Finished.") + acMsgDelta("end_turn", `{"output_tokens":2}`) + acMsgStop
		out, _, _ := acRun(t, acOp{how: "first", stream: s1}, acOp{how: "cont", stream: s2, remove: []int{0}}, acOp{how: "next", stream: s3})
		msg, starts := aspAccumulate(t, out)
		require.Equal(t, []int64{0, 1}, starts)
		require.Equal(t, "Some partial sentence that goes on.", msg.Content[0].Text)
		require.Equal(t, "Finished.", msg.Content[1].Text)
		require.EqualValues(t, 37, msg.Usage.OutputTokens)
	})

	t.Run("kept call before the continuation", func(t *testing.T) {
		// Release writes a kept call: the text is closed, the continuation
		// opens a new block.
		a := acMsgStart("msg_1", 10) + acToolBlock(0, "t", `{}`) + acTextBlock(1, "After the call") + acMsgDelta("max_tokens", `{"output_tokens":3}`) + acMsgStop
		b := acMsgStart("msg_2", 10) + acTextBlock(0, " more.") + acMsgDelta("end_turn", `{"output_tokens":2}`) + acMsgStop
		out, parts, _ := acRun(t, acOp{how: "first", stream: a}, acOp{how: "cont", stream: b})
		require.True(t, strings.HasSuffix(parts[0], acStop(0)+acToolBlock(1, "t", `{}`)))
		msg, _ := aspAccumulate(t, out)
		require.Equal(t, []string{"text", "tool_use", "text"}, acTypes(msg))
		require.Equal(t, " more.", msg.Content[2].Text)
	})
}

func TestAnthropicSpliceContinueRandom(t *testing.T) {
	// Random turns of mock streams joined by Next and Continue: the agent's
	// stream stays valid and its text is what ContinueReply and
	// MergeReplies make of the streams' replies.
	rng := rand.New(rand.NewSource(7))
	words := strings.Fields("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor ünïcödé 漢字")
	gen := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(words[rng.Intn(len(words))])
			b.WriteByte(" \n"[rng.Intn(2)])
		}
		return b.String()
	}
	compared, conts := 0, 0
	for iter := 0; iter < 120; iter++ {
		n := 1 + rng.Intn(4)
		var ops []acOp
		var prevText string
		for i := 0; i < n; i++ {
			r := mock.Reply{ID: fmt.Sprintf("msg_%d", i), Usage: mock.Usage{Input: 10 + i, Output: 5 + i}}
			if rng.Intn(3) > 0 {
				r.Text = gen(rng.Intn(80))
				if prevText != "" && rng.Intn(2) == 0 {
					k := len(prevText) - min(len(prevText), rng.Intn(300))
					for k < len(prevText) && !utf8.RuneStart(prevText[k]) {
						k++
					}
					r.Text = prevText[k:] + r.Text // repeat the end
				}
			}
			if r.Text == "" {
				r.Text = "x" // the mock pads an empty text
			}
			if rng.Intn(3) == 0 {
				r.Thinking = &mock.Thinking{Text: gen(3), Signature: "S"}
			}
			if rng.Intn(3) == 0 {
				r.ToolCalls = []mock.ToolCall{{ID: fmt.Sprintf("t%d", i), Name: "n", Args: `{"a":1}`}}
			}
			if i < n-1 {
				r.Stop = "max_tokens"
			}
			prevText = r.Text
			how := "first"
			if i > 0 {
				how = []string{"next", "cont"}[rng.Intn(2)]
			}
			op := acOp{how: how, stream: acMock(t, r, true, []int{2, 5, 16, -1}[rng.Intn(4)])}
			if len(r.ToolCalls) > 0 && rng.Intn(2) == 0 {
				op.remove = []int{0}
			}
			ops = append(ops, op)
		}
		out, _, replies := acRun(t, ops...)
		msg, starts := aspAccumulate(t, out)
		for i, s := range starts {
			require.EqualValues(t, i, s)
		}
		// The non-streaming engine's copy. It differs when a removed call
		// followed the text a continuation runs on in: the call's start
		// closed the streamed text block, while ContinueReply appends to
		// the edited reply's last text.
		var acc []byte
		same := true
		for i, op := range ops {
			edited, err := anthTC.EditReply(replies[i], op.remove, nil)
			require.NoError(t, err)
			switch {
			case acc == nil:
				acc = edited
			case op.how == "cont":
				same = same && len(ops[i-1].remove) == 0
				conts++
				acc, err = anthCC.ContinueReply(acc, edited)
			default:
				acc, err = anthTC.MergeReplies(acc, edited)
			}
			require.NoError(t, err)
		}
		require.Equal(t, gjson.GetBytes(acc, "usage.output_tokens").Int(), msg.Usage.OutputTokens)
		require.Equal(t, gjson.GetBytes(acc, "stop_reason").Str, string(msg.StopReason))
		if same {
			require.JSONEq(t, gjson.GetBytes(acc, "content").Raw, aspContent(t, msg), "iter %d", iter)
			compared++
		}
	}
	require.Greater(t, compared, 60)
	require.Greater(t, conts, 60)
}
