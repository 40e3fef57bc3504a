package responses

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

var respCC = func() rewrite.ContinueCodec {
	cc, ok := rewrite.Continuer(apitest.CodecFor(Descriptor))
	if !ok {
		panic("responses codec has no ContinueCodec")
	}
	return cc
}()

// rcMock renders r as the mock provider's Responses reply: an SSE stream
// (text in deltas of chunk runes) or, without stream, the JSON body.
func rcMock(t testing.TB, r mock.Reply, stream bool, chunk int) []byte {
	t.Helper()
	srv := mock.New(mock.Options{ChunkSize: chunk})
	srv.Script(r)
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/responses")
	ctx.Request.SetBodyString(`{"model":"gpt-5","stream":` + strconv.FormatBool(stream) + `,"input":"hi"}`)
	srv.Handler()(&ctx)
	require.Equal(t, 200, ctx.Response.StatusCode())
	return bytes.Clone(ctx.Response.Body())
}

func rcJSON(t testing.TB, r mock.Reply) []byte { return rcMock(t, r, false, 0) }

func TestResponsesContinuer(t *testing.T) {
	_, ok := respCC.(responsesCodec)
	require.True(t, ok)
	var sp rewrite.StreamSplicer = Descriptor.NewSplicer()
	_, ok = sp.(rewrite.ContinueSplicer)
	require.True(t, ok)
}

func TestResponsesContinuationMessages(t *testing.T) {
	r := mock.Reply{ID: "r1", Text: "Half of the answer \n", Stop: "max_tokens",
		Thinking: &mock.Thinking{Text: "hmm", Signature: "SIG"},
		ToolCalls: []mock.ToolCall{{ID: "c1", Name: "write_file", Args: `{"path":"a.go"}`},
			{ID: "c2", Name: "apply_patch", Args: "*** Begin", Custom: true}}}
	reply := rcJSON(t, r)
	out := rewrite.BlocksElems(gjson.GetBytes(reply, "output"))
	require.Len(t, out, 4)

	items, hasText, err := respCC.ContinuationMessages(reply, false)
	require.NoError(t, err)
	require.True(t, hasText)
	require.Equal(t, [][]byte{[]byte(out[0].Raw), []byte(out[1].Raw)}, items, "calls dropped, the rest byte for byte")

	items, hasText, err = respCC.ContinuationMessages(reply, true)
	require.NoError(t, err)
	require.True(t, hasText)
	require.Len(t, items, 2)
	require.Equal(t, out[0].Raw, string(items[0]), "reasoning byte for byte")
	require.Equal(t, strings.Replace(out[1].Raw, `"Half of the answer \n"`, `"Half of the answer"`, 1), string(items[1]),
		"only the text is trimmed")

	// The items are accepted as input and read back as the reply's text.
	body := []byte(`{"model":"gpt-5","input":[{"role":"user","content":"hi"}]}`)
	body, err = responsesCodec{views: apitest.Views}.AppendMessages(body, items)
	require.NoError(t, err)
	req, err := responsesCodec{views: apitest.Views}.ParseRequest(body)
	require.NoError(t, err)
	require.Len(t, req.Messages, 2)
	require.Equal(t, conv.RoleAssistant, req.Messages[1].Role)
	require.Equal(t, "Half of the answer", req.Messages[1].Blocks[1].Text)

	t.Run("escapes kept", func(t *testing.T) {
		reply := []byte(`{"status":"incomplete","output":[{"type":"message","id":"m","content":[` +
			`{"type":"output_text","text":"caf\u00e9 \"x\"\t\n\u0020 "}]}]}`)
		items, hasText, err := respCC.ContinuationMessages(reply, true)
		require.NoError(t, err)
		require.True(t, hasText)
		require.Equal(t, `{"type":"message","id":"m","content":[{"type":"output_text","text":"caf\u00e9 \"x\""}]}`, string(items[0]))
	})
	t.Run("prefill ends with the last text", func(t *testing.T) {
		reply := []byte(`{"output":[{"type":"message","id":"m","content":[{"type":"output_text","text":"one "},` +
			`{"type":"output_text","text":" \n"},{"type":"refusal","refusal":"no"}]},{"type":"reasoning","id":"rs"},` +
			`{"type":"function_call","call_id":"c","name":"f","arguments":"{"}]}`)
		items, hasText, err := respCC.ContinuationMessages(reply, true)
		require.NoError(t, err)
		require.True(t, hasText)
		require.Equal(t, []string{`{"type":"message","id":"m","content":[{"type":"output_text","text":"one"}]}`}, rcStrings(items))
		items, _, err = respCC.ContinuationMessages(reply, false)
		require.NoError(t, err)
		require.Len(t, items, 1, "without prefill the call goes, and the reasoning that produced it")
	})
	t.Run("reasoning before a dropped call goes, before text stays", func(t *testing.T) {
		r := mock.Reply{ID: "r3", Stop: "max_tokens", Thinking: &mock.Thinking{Text: "t", Signature: "S"},
			Text: "Writing it.", ToolCalls: []mock.ToolCall{{ID: "c", Name: "write_file", Args: `{"pa`}}}
		reply := rcJSON(t, r)
		items, hasText, err := respCC.ContinuationMessages(reply, false)
		require.NoError(t, err)
		require.True(t, hasText)
		require.Equal(t, []string{gjson.GetBytes(reply, "output.0").Raw, gjson.GetBytes(reply, "output.1").Raw}, rcStrings(items))
	})
	t.Run("no text", func(t *testing.T) {
		// Only a call cut by the limit, after reasoning.
		r := mock.Reply{ID: "r2", Stop: "max_tokens", Thinking: &mock.Thinking{Text: "t", Signature: "S"},
			ToolCalls: []mock.ToolCall{{ID: "c", Name: "write_file", Args: `{"pa`}}}
		reply := rcJSON(t, r)
		items, hasText, err := respCC.ContinuationMessages(reply, false)
		require.NoError(t, err)
		require.False(t, hasText)
		require.Empty(t, items, "the reasoning item goes with the call it produced")
		items, hasText, err = respCC.ContinuationMessages(reply, true)
		require.NoError(t, err)
		require.False(t, hasText)
		require.Empty(t, items)
		// Whitespace only: the message and the reasoning before it go.
		ws := []byte(`{"output":[{"type":"reasoning","id":"rs"},{"type":"message","content":[{"type":"output_text","text":" \n "}]}]}`)
		items, hasText, err = respCC.ContinuationMessages(ws, true)
		require.NoError(t, err)
		require.False(t, hasText)
		require.Empty(t, items)
		items, hasText, err = respCC.ContinuationMessages(ws, false)
		require.NoError(t, err)
		require.True(t, hasText, "without prefill the text is kept as it is")
		require.Len(t, items, 2)
	})
	t.Run("malformed", func(t *testing.T) {
		for _, b := range []string{`{`, `[]`, `{"output":{}}`, `{"output":[1]}`, `{}`} {
			_, _, err := respCC.ContinuationMessages([]byte(b), false)
			require.Error(t, err, b)
		}
	})
}

func rcStrings(items [][]byte) []string {
	var out []string
	for _, it := range items {
		out = append(out, string(it))
	}
	return out
}

func TestResponsesLiteralPrefix(t *testing.T) {
	for _, c := range []struct {
		lit  string
		keep int
		want string
	}{
		{`"abc  "`, 3, `"abc"`},
		{`"a\u0020\n"`, 1, `"a"`},
		{`"\ud83d\ude00 x \t"`, 6, `"\ud83d\ude00 x"`},
		{`"é\u00a0"`, 2, `"é"`},
		{`"a\\ "`, 2, `"a\\"`},
	} {
		s := gjson.Parse(c.lit)
		trimmed := s.Str[:c.keep]
		require.Equal(t, c.want, string(respTrimmedLiteral(s, trimmed)), c.lit)
	}
}

func TestResponsesUserTextMessage(t *testing.T) {
	b, err := respCC.UserTextMessage("Continue \"exactly\".")
	require.NoError(t, err)
	require.Equal(t, `{"role":"user","content":[{"type":"input_text","text":"Continue \"exactly\"."}]}`, string(b))
	body, err := responsesCodec{views: apitest.Views}.AppendMessages([]byte(`{"input":"hi"}`), [][]byte{b})
	require.NoError(t, err)
	req, err := responsesCodec{views: apitest.Views}.ParseRequest(body)
	require.NoError(t, err)
	require.Len(t, req.Messages, 2)
	require.Equal(t, conv.RoleUser, req.Messages[1].Role)
	require.Equal(t, `Continue "exactly".`, req.Messages[1].Blocks[0].Text)
}

func TestResponsesContinueReply(t *testing.T) {
	partial := "The quick brown fox jumps over"
	acc := rcJSON(t, mock.Reply{ID: "resp_a", Text: partial, Stop: "max_tokens",
		Thinking: &mock.Thinking{Text: "plan", Signature: "enc_a"}, Usage: mock.Usage{Input: 10, Output: 100, Reasoning: 5}})
	next := rcJSON(t, mock.Reply{ID: "resp_b", Text: "fox jumps over the lazy dog.",
		Thinking:  &mock.Thinking{Text: "again", Signature: "enc_b"},
		ToolCalls: []mock.ToolCall{{ID: "call_w", Name: "write_file", Args: `{"path":"a"}`}},
		Usage:     mock.Usage{Input: 130, Output: 20, Reasoning: 3}})
	got, err := respCC.ContinueReply(acc, next)
	require.NoError(t, err)
	r, err := responsesCodec{views: apitest.Views}.ParseReply(got)
	require.NoError(t, err)
	require.Equal(t, partial+" the lazy dog.", r.Text, "the seam de-duplicated")
	require.Equal(t, conv.StopToolUse, r.Stop)
	require.Len(t, r.ToolCalls, 1)
	require.Equal(t, "call_w", r.ToolCalls[0].ID)
	require.EqualValues(t, 120, r.Usage.OutputTokens)
	require.EqualValues(t, 130, r.Usage.InputTokens)
	g := gjson.ParseBytes(got)
	require.Equal(t, "resp_b", g.Get("id").Str)
	require.Equal(t, "completed", g.Get("status").Str)
	require.Equal(t, "null", g.Get("incomplete_details").Raw)
	require.EqualValues(t, 250, g.Get("usage.total_tokens").Int(), "next's input + the summed output")
	require.EqualValues(t, 8, g.Get("usage.output_tokens_details.reasoning_tokens").Int())
	var types []string
	for _, it := range g.Get("output").Array() {
		types = append(types, it.Get("id").Str)
	}
	require.Equal(t, []string{"rs_resp_a", "msg_resp_a", "fc_resp_b_0"}, types, "next's reasoning dropped")
	require.Equal(t, "completed", g.Get("output.1.status").Str, "the message's status is next's")
	// acc's bytes are kept around the edited text and outcome.
	// Byte for byte: acc with the outcome, the text, the message's status,
	// the appended call and the usage edited.
	want := strings.Replace(string(acc), `"id":"resp_a"`, `"id":"resp_b"`, 1)
	want = strings.ReplaceAll(want, `"status":"incomplete"`, `"status":"completed"`)
	want = strings.Replace(want, `"incomplete_details":{"reason":"max_output_tokens"}`, `"incomplete_details":null`, 1)
	want = strings.Replace(want, `"`+partial+`"`, `"`+partial+` the lazy dog."`, 1)
	want = strings.Replace(want, `],"parallel_tool_calls"`, `,`+gjson.GetBytes(next, "output.2").Raw+`],"parallel_tool_calls"`, 1)
	want = strings.Replace(want, gjson.GetBytes(acc, "usage").Raw, g.Get("usage").Raw, 1)
	require.Equal(t, want, string(got))
	require.Equal(t, gjson.GetBytes(acc, "output.0").Raw, g.Get("output.0").Raw)
	require.Equal(t, gjson.GetBytes(next, "output.2").Raw, g.Get("output.2").Raw)
	require.Equal(t, gjson.GetBytes(acc, "model").Raw, g.Get("model").Raw)

	t.Run("next still incomplete", func(t *testing.T) {
		next := rcJSON(t, mock.Reply{ID: "resp_c", Text: " and more", Stop: "max_tokens", Usage: mock.Usage{Input: 1, Output: 7}})
		got, err := respCC.ContinueReply(acc, next)
		require.NoError(t, err)
		g := gjson.ParseBytes(got)
		require.Equal(t, "incomplete", g.Get("status").Str)
		require.Equal(t, "max_output_tokens", g.Get("incomplete_details.reason").Str)
		require.Equal(t, partial+" and more", g.Get("output.1.content.0.text").Str)
		require.Equal(t, "incomplete", g.Get("output.1.status").Str)
		require.EqualValues(t, 107, g.Get("usage.output_tokens").Int())
	})
	t.Run("next without incomplete_details", func(t *testing.T) {
		got, err := respCC.ContinueReply(acc, []byte(`{"id":"x","status":"completed","output":[]}`))
		require.NoError(t, err)
		g := gjson.ParseBytes(got)
		require.False(t, g.Get("incomplete_details").Exists(), "dropped")
		require.Equal(t, partial, g.Get("output.1.content.0.text").Str)
		require.Equal(t, gjson.GetBytes(acc, "usage").Raw, g.Get("usage").Raw, "next has no usage: acc's")
	})
	t.Run("escapes kept", func(t *testing.T) {
		acc := []byte(`{"id":"a","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[` +
			`{"type":"message","id":"m","status":"incomplete","content":[{"type":"output_text","text":"caf\u00e9 \"au lait\" and"}]}]}`)
		next := []byte(`{"id":"b","status":"completed","incomplete_details":null,"output":[{"type":"message","id":"m2",` +
			`"status":"completed","content":[{"type":"output_text","text":"\"au lait\" and croissants"},{"type":"refusal","refusal":"no"}]}]}`)
		got, err := respCC.ContinueReply(acc, next)
		require.NoError(t, err)
		require.Equal(t, `{"id":"b","status":"completed","incomplete_details":null,"output":[`+
			`{"type":"message","id":"m","status":"completed","content":[{"type":"output_text","text":"caf\u00e9 \"au lait\" and croissants"},`+
			`{"type":"refusal","refusal":"no"}]}]}`, string(got))
	})
	t.Run("acc without text", func(t *testing.T) {
		acc := rcJSON(t, mock.Reply{ID: "resp_a", Stop: "max_tokens", Thinking: &mock.Thinking{Text: "t", Signature: "S"},
			Usage: mock.Usage{Input: 5, Output: 9}})
		next := rcJSON(t, mock.Reply{ID: "resp_b", Text: "Hello.", Thinking: &mock.Thinking{Text: "u", Signature: "T"},
			Usage: mock.Usage{Input: 6, Output: 2}})
		got, err := respCC.ContinueReply(acc, next)
		require.NoError(t, err)
		g := gjson.ParseBytes(got)
		require.Len(t, g.Get("output").Array(), 2)
		require.Equal(t, gjson.GetBytes(acc, "output.0").Raw, g.Get("output.0").Raw)
		require.Equal(t, gjson.GetBytes(next, "output.1").Raw, g.Get("output.1").Raw, "a new message after acc's content")
		require.EqualValues(t, 11, g.Get("usage.output_tokens").Int())
	})
	t.Run("an item before the text", func(t *testing.T) {
		next := []byte(`{"id":"b","status":"completed","output":[{"type":"web_search_call","id":"ws"},` +
			`{"type":"message","id":"m2","content":[{"type":"output_text","text":"fox jumps over the lazy dog."}]}]}`)
		got, err := respCC.ContinueReply(acc, next)
		require.NoError(t, err)
		g := gjson.ParseBytes(got)
		require.Equal(t, partial, g.Get("output.1.content.0.text").Str, "the text no longer ends acc's content")
		require.Equal(t, "ws", g.Get("output.2.id").Str)
		require.Equal(t, "m2", g.Get("output.3.id").Str)
	})
	t.Run("malformed", func(t *testing.T) {
		for _, c := range [][2]string{{`{`, `{}`}, {`{}`, `[]`}, {`{"output":1}`, `{}`}, {`{}`, `{"output":[1]}`}} {
			_, err := respCC.ContinueReply([]byte(c[0]), []byte(c[1]))
			require.Error(t, err, c)
		}
	})
}

// rcStep is one upstream stream of a spliced turn.
type rcStep struct {
	sse    []byte
	cont   bool  // started with Continue (else Next); ignored for the first
	remove []int // Release's remove
}

// rcRun splices the steps and returns the agent's stream, what each call
// wrote (feed output, Release's, per stream, then Finish's) and each
// stream's Reply.
func rcRun(t testing.TB, steps ...rcStep) (out []byte, parts [][]byte, replies [][]byte, sp rewrite.StreamSplicer) {
	t.Helper()
	sp = Descriptor.NewSplicer()
	for i, st := range steps {
		if i > 0 {
			if st.cont {
				sp.(rewrite.ContinueSplicer).Continue()
			} else {
				sp.Next()
			}
		}
		var fed []byte
		rd := rewrite.NewReader(bytes.NewReader(st.sse))
		for {
			ev, err := rd.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			b, err := sp.Feed(&ev)
			require.NoError(t, err)
			fed = append(fed, b...)
		}
		require.True(t, sp.Done())
		reply, err := sp.Reply()
		require.NoError(t, err)
		replies = append(replies, reply)
		rel, err := sp.Release(st.remove, nil)
		require.NoError(t, err)
		parts = append(parts, fed, rel)
		out = append(append(out, fed...), rel...)
	}
	fin, err := sp.Finish()
	require.NoError(t, err)
	parts = append(parts, fin)
	out = append(out, fin...)
	return out, parts, replies, sp
}

// rcAgent checks that out is one valid Responses stream as the agent reads
// it and returns its terminal response with the reply its events
// accumulate to.
func rcAgent(t *testing.T, out []byte, sp rewrite.StreamSplicer) (responses.Response, *conv.Reply) {
	t.Helper()
	evs := respParseSpliced(t, out)
	last := respCheckSpliced(t, evs)
	require.Equal(t, len(evs), sp.Events())
	// Every delta carries text, and the close events repeat what the deltas
	// of their part added up to.
	texts := map[string]string{}
	key := func(e respSplicedEvent) string { return fmt.Sprint(e.ev.ItemID, "/", e.ev.ContentIndex) }
	for _, e := range evs {
		switch e.name {
		case "response.output_text.delta":
			require.NotEmpty(t, e.ev.Delta, "no empty delta events")
			texts[key(e)] += e.ev.Delta
		case "response.output_text.done":
			require.Equal(t, texts[key(e)], e.ev.Text)
		case "response.content_part.done":
			require.Equal(t, texts[key(e)], e.ev.Part.Text)
		case "response.output_item.done":
			for i, p := range e.ev.Item.Content {
				if p.Type == "output_text" {
					require.Equal(t, texts[fmt.Sprint(e.ev.Item.ID, "/", i)], p.Text)
				}
			}
		}
	}
	dec := responsesCodec{views: apitest.Views}.NewStreamDecoder()
	var acc rewrite.StreamAccumulator
	rd := rewrite.NewReader(bytes.NewReader(out))
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		se, err := dec.Decode(ev)
		require.NoError(t, err)
		acc.Add(se...)
	}
	r := acc.Reply()
	require.Equal(t, r.Text, last.Response.OutputText(), "the terminal response holds the streamed text")
	return last.Response, r
}

// rcOpenPart splits the events of sse, a stream whose last block is its
// message's text, into those the agent gets at once and those that close
// the text (held); calls and the terminal event are in neither.
func rcOpenPart(t *testing.T, sse []byte) (shown, held []string) {
	for _, raw := range respRawEvents(t, sse) {
		typ := gjson.Get(raw[strings.Index(raw, "data: ")+6:], "type").Str
		switch {
		case typ == "response.output_text.done", typ == "response.content_part.done",
			typ == "response.output_item.done" && strings.Contains(raw, `"type":"message"`):
			held = append(held, raw)
		case typ == "response.incomplete", typ == "response.completed":
		case strings.Contains(typ, "function_call"), typ == "response.output_item.added" && strings.Contains(raw, `"type":"function_call"`),
			typ == "response.output_item.done" && strings.Contains(raw, `"type":"function_call"`):
		default:
			shown = append(shown, raw)
		}
	}
	return shown, held
}

func TestResponsesSpliceContinue(t *testing.T) {
	partial := "The migration runs in three steps. First, back up the database, then stop the"
	cont := "then stop the web servers and run the migration script."
	want := partial + rewrite.TrimSeam(partial, cont)
	require.Equal(t, partial+" web servers and run the migration script.", want)
	for _, chunk := range []int{1, 4, 16, -1} {
		for _, crlf := range []bool{false, true} {
			t.Run(fmt.Sprintf("chunk=%d/crlf=%v", chunk, crlf), func(t *testing.T) {
				r1 := mock.Reply{ID: "resp_a", Text: partial, Stop: "max_tokens", Thinking: &mock.Thinking{Text: "plan", Signature: "enc_a"},
					Usage: mock.Usage{Input: 10, Output: 100, Reasoning: 4}}
				r2 := mock.Reply{ID: "resp_b", Text: cont, Thinking: &mock.Thinking{Text: "resume", Signature: "enc_b"},
					Usage: mock.Usage{Input: 120, Output: 30, Reasoning: 2}}
				s1, s2 := rcMock(t, r1, true, chunk), rcMock(t, r2, true, chunk)
				if crlf {
					s1, s2 = bytes.ReplaceAll(s1, []byte("\n"), []byte("\r\n")), bytes.ReplaceAll(s2, []byte("\n"), []byte("\r\n"))
				}
				out, parts, replies, sp := rcRun(t, rcStep{sse: s1}, rcStep{sse: s2, cont: true})

				// The first stream passes but for its text's close events.
				shown, held := rcOpenPart(t, s1)
				require.Len(t, held, 3)
				require.Equal(t, strings.Join(shown, ""), string(parts[0]))
				require.Empty(t, parts[1], "Release has no call to write and keeps the text open")
				// The continuation: no preamble, no reasoning, its text as
				// deltas of the open text.
				for _, e := range respParseSpliced(t, parts[2]) {
					require.Equal(t, "response.output_text.delta", e.name, "only text deltas: %s", e.data)
					require.Equal(t, "msg_resp_a", e.ev.ItemID)
					require.EqualValues(t, 1, e.ev.OutputIndex)
					require.EqualValues(t, 0, e.ev.ContentIndex)
				}
				// Each stream's own reply.
				require.Equal(t, "resp_a", gjson.GetBytes(replies[0], "id").Str)
				require.Equal(t, "resp_b", gjson.GetBytes(replies[1], "id").Str)
				require.Equal(t, cont, gjson.GetBytes(replies[1], "output.1.content.0.text").Str, "Reply is the continuation's own")
				require.Len(t, gjson.GetBytes(replies[1], "output").Array(), 2)
				// Finish: the held close events with the merged text, then
				// one terminal event.
				fin := respParseSpliced(t, parts[4])
				require.Equal(t, []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"},
					rcNames(fin))
				require.Equal(t, want, fin[0].ev.Text)
				require.Equal(t, want, fin[1].ev.Part.Text)
				require.Equal(t, want, fin[2].ev.Item.Content[0].Text)
				require.Equal(t, "completed", string(fin[2].ev.Item.Status), "the continuation's status")
				// Only the text value changes in the held events.
				for i, h := range held {
					wantEv := strings.Replace(h, `"`+partial+`"`, `"`+want+`"`, 1)
					wantEv = strings.Replace(wantEv, `"status":"incomplete"`, `"status":"completed"`, 1)
					got := respRawEvents(t, parts[4])[i]
					seq := gjson.Get(got[strings.Index(got, "data: ")+6:], "sequence_number").Int()
					wantEv = strings.Replace(wantEv, fmt.Sprintf(`"sequence_number":%d`, gjson.Get(h[strings.Index(h, "data: ")+6:], "sequence_number").Int()),
						fmt.Sprintf(`"sequence_number":%d`, seq), 1)
					require.Equal(t, wantEv, got)
				}

				resp, acc := rcAgent(t, out, sp)
				require.Equal(t, want, acc.Text)
				require.Equal(t, conv.StopEnd, acc.Stop)
				require.Equal(t, "resp_b", resp.ID)
				require.Equal(t, "completed", string(resp.Status))
				require.Empty(t, resp.IncompleteDetails.Reason)
				require.EqualValues(t, 120, resp.Usage.InputTokens)
				require.EqualValues(t, 130, resp.Usage.OutputTokens)
				require.EqualValues(t, 6, resp.Usage.OutputTokensDetails.ReasoningTokens)
				require.EqualValues(t, 250, resp.Usage.TotalTokens)
				require.Len(t, resp.Output, 2)
				require.Equal(t, "rs_resp_a", resp.Output[0].ID, "the first stream's reasoning stays")
				// The terminal response is ContinueReply's.
				merged, err := respCC.ContinueReply(replies[0], replies[1])
				require.NoError(t, err)
				evs := respParseSpliced(t, out)
				require.JSONEq(t, string(merged), gjson.Get(evs[len(evs)-1].data, "response").Raw)
			})
		}
	}
}

func rcNames(evs []respSplicedEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.name)
	}
	return out
}

func TestResponsesSpliceContinueTwice(t *testing.T) {
	p := "Alpha beta gamma delta epsilon"
	c1 := "delta epsilon zeta eta theta iota"
	c2 := "theta iota kappa lambda."
	want := p + rewrite.TrimSeam(p, c1)
	want += rewrite.TrimSeam(want, c2)
	require.Equal(t, "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda.", want)
	for _, chunk := range []int{1, 7, -1} {
		r1 := mock.Reply{ID: "resp_a", Text: p, Stop: "max_tokens", Usage: mock.Usage{Input: 5, Output: 10}}
		r2 := mock.Reply{ID: "resp_b", Text: c1, Stop: "max_tokens", Thinking: &mock.Thinking{Text: "x", Signature: "S"},
			Usage: mock.Usage{Input: 15, Output: 10}}
		r3 := mock.Reply{ID: "resp_c", Text: c2, Usage: mock.Usage{Input: 25, Output: 4}}
		out, parts, _, sp := rcRun(t, rcStep{sse: rcMock(t, r1, true, chunk)},
			rcStep{sse: rcMock(t, r2, true, chunk), cont: true}, rcStep{sse: rcMock(t, r3, true, chunk), cont: true})
		for _, p := range parts[:6] {
			require.NotContains(t, string(p), "response.output_text.done", "the text stays open")
		}
		resp, acc := rcAgent(t, out, sp)
		require.Equal(t, want, acc.Text, "chunk %d", chunk)
		require.Len(t, resp.Output, 1)
		require.Equal(t, "msg_resp_a", resp.Output[0].ID)
		require.Equal(t, "resp_c", resp.ID)
		require.EqualValues(t, 24, resp.Usage.OutputTokens)
		require.EqualValues(t, 25, resp.Usage.InputTokens)
		require.Equal(t, "completed", string(resp.Status))
		require.Equal(t, 1, strings.Count(string(out), "event: response.completed"), "one terminal event")
		require.NotContains(t, string(out), "response.incomplete")
	}
}

func TestResponsesSpliceContinueThinkingAndCall(t *testing.T) {
	p := "I will now create the file named main.go"
	r1 := mock.Reply{ID: "resp_a", Text: p, Stop: "max_tokens", Thinking: &mock.Thinking{Text: "plan", Signature: "A"},
		Usage: mock.Usage{Input: 5, Output: 11}}
	r2 := mock.Reply{ID: "resp_b", Text: "named main.go with the handler.", Thinking: &mock.Thinking{Text: "where was I", Signature: "B"},
		ToolCalls: []mock.ToolCall{{ID: "call_w", Name: "write_file", Args: `{"path":"main.go"}`}}, Usage: mock.Usage{Input: 9, Output: 22}}
	s2 := rcMock(t, r2, true, 5)
	out, parts, replies, sp := rcRun(t, rcStep{sse: rcMock(t, r1, true, 5)}, rcStep{sse: s2, cont: true})
	require.NotContains(t, string(parts[2]), "where was I", "the continuation's reasoning is dropped")
	require.NotContains(t, string(parts[2]), "rs_resp_b")
	require.NotContains(t, string(parts[2]), "function_call", "the call is held")
	// Release writes the text's close events, then the call.
	rel := respParseSpliced(t, parts[3])
	names := rcNames(rel)
	require.Equal(t, []string{"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta"}, names[:5])
	require.Equal(t, []string{"response.function_call_arguments.done", "response.output_item.done"}, names[len(names)-2:])
	require.Equal(t, p+" with the handler.", rel[0].ev.Text)
	for _, e := range rel[3:] {
		require.EqualValues(t, 2, e.ev.OutputIndex)
	}
	view, err := responsesCodec{views: apitest.Views}.ParseReply(replies[1])
	require.NoError(t, err)
	require.Len(t, view.ToolCalls, 1)
	resp, acc := rcAgent(t, out, sp)
	require.Equal(t, p+" with the handler.", acc.Text)
	require.Equal(t, conv.StopToolUse, acc.Stop)
	require.Len(t, acc.ToolCalls, 1)
	require.Equal(t, "call_w", acc.ToolCalls[0].ID)
	require.Equal(t, `{"path":"main.go"}`, string(acc.ToolCalls[0].Args))
	var ids []string
	for _, it := range resp.Output {
		ids = append(ids, it.ID)
	}
	require.Equal(t, []string{"rs_resp_a", "msg_resp_a", "fc_resp_b_0"}, ids)
	require.EqualValues(t, 33, resp.Usage.OutputTokens)
	merged, err := respCC.ContinueReply(replies[0], replies[1])
	require.NoError(t, err)
	evs := respParseSpliced(t, out)
	require.JSONEq(t, string(merged), gjson.Get(evs[len(evs)-1].data, "response").Raw)
}

func TestResponsesSpliceContinueAfterCutCall(t *testing.T) {
	// The first stream's last block is a call cut by the limit: the engine
	// removes it, and the continuation continues the text before it.
	p := "I will write the file"
	r1 := mock.Reply{ID: "resp_a", Text: p, Stop: "max_tokens", Usage: mock.Usage{Input: 5, Output: 64},
		ToolCalls: []mock.ToolCall{{ID: "call_cut", Name: "write_file", Args: `{"path":"main.go","content":"package`}}}
	r2 := mock.Reply{ID: "resp_b", Text: "write the file main.go now.", Usage: mock.Usage{Input: 9, Output: 20},
		ToolCalls: []mock.ToolCall{{ID: "call_new", Name: "write_file", Args: `{"path":"main.go"}`}}}
	out, parts, _, sp := rcRun(t, rcStep{sse: rcMock(t, r1, true, 3), remove: []int{0}}, rcStep{sse: rcMock(t, r2, true, 3), cont: true})
	require.Empty(t, parts[1], "the cut call is removed; the text stays open")
	require.NotContains(t, string(out), "call_cut")
	resp, acc := rcAgent(t, out, sp)
	require.Equal(t, p+" main.go now.", acc.Text)
	require.Len(t, acc.ToolCalls, 1)
	require.Equal(t, "call_new", acc.ToolCalls[0].ID)
	require.Len(t, resp.Output, 2)
	require.Equal(t, "msg_resp_a", resp.Output[0].ID)
	require.Equal(t, "fc_resp_b_0", resp.Output[1].ID)
	require.Equal(t, "completed", string(resp.Status))
	require.EqualValues(t, 84, resp.Usage.OutputTokens)

	t.Run("no text before the call", func(t *testing.T) {
		// Nothing to continue: the continuation's text opens a new message
		// (its reasoning still dropped).
		r1 := mock.Reply{ID: "resp_a", Stop: "max_tokens", Thinking: &mock.Thinking{Text: "t", Signature: "S"},
			ToolCalls: []mock.ToolCall{{ID: "call_cut", Name: "write_file", Args: `{"pa`}}, Usage: mock.Usage{Input: 1, Output: 64}}
		r2 := mock.Reply{ID: "resp_b", Text: "Writing it now.", Thinking: &mock.Thinking{Text: "u", Signature: "T"},
			Usage: mock.Usage{Input: 2, Output: 5}}
		out, _, _, sp := rcRun(t, rcStep{sse: rcMock(t, r1, true, 4), remove: []int{0}}, rcStep{sse: rcMock(t, r2, true, 4), cont: true})
		resp, acc := rcAgent(t, out, sp)
		require.Equal(t, "Writing it now.", acc.Text)
		require.Len(t, resp.Output, 2)
		require.Equal(t, "rs_resp_a", resp.Output[0].ID)
		require.Equal(t, "msg_resp_b", resp.Output[1].ID)
		require.NotContains(t, string(out), "rs_resp_b")
	})
	t.Run("kept call", func(t *testing.T) {
		// A call the agent gets closes the text: the continuation opens a
		// new message after it.
		r1 := mock.Reply{ID: "resp_a", Text: "Reading.", Stop: "max_tokens",
			ToolCalls: []mock.ToolCall{{ID: "call_r", Name: "read_file", Args: `{}`}}, Usage: mock.Usage{Input: 1, Output: 9}}
		r2 := mock.Reply{ID: "resp_b", Text: "Then more.", Usage: mock.Usage{Input: 2, Output: 3}}
		out, parts, _, sp := rcRun(t, rcStep{sse: rcMock(t, r1, true, 4)}, rcStep{sse: rcMock(t, r2, true, 4), cont: true})
		require.Equal(t, "response.output_text.done", rcNames(respParseSpliced(t, parts[1]))[0], "the text's close events first")
		resp, acc := rcAgent(t, out, sp)
		require.Equal(t, "Reading.Then more.", acc.Text)
		var ids []string
		for _, it := range resp.Output {
			ids = append(ids, it.ID)
		}
		require.Equal(t, []string{"msg_resp_a", "fc_resp_a_0", "msg_resp_b"}, ids)
	})
}

func TestResponsesSpliceContinueSeam(t *testing.T) {
	t.Run("all repeated", func(t *testing.T) {
		p := "Nothing new under the sun"
		r1 := mock.Reply{ID: "resp_a", Text: p, Stop: "max_tokens", Usage: mock.Usage{Input: 1, Output: 5}}
		r2 := mock.Reply{ID: "resp_b", Text: "under the sun", Usage: mock.Usage{Input: 2, Output: 3}}
		s1 := rcMock(t, r1, true, 2)
		out, parts, _, sp := rcRun(t, rcStep{sse: s1}, rcStep{sse: rcMock(t, r2, true, 2), cont: true})
		require.Empty(t, parts[2], "nothing to add: no event at all")
		_, acc := rcAgent(t, out, sp)
		require.Equal(t, p, acc.Text)
		_, held := rcOpenPart(t, s1)
		fin := respRawEvents(t, parts[4])
		require.Equal(t, held[:2], fin[:2], "the text's close events as they were")
	})
	t.Run("short continuation in one delta", func(t *testing.T) {
		// The filter keeps text until SeamWindow bytes or the text's end:
		// a short continuation reaches the agent as one delta, on the
		// event of its last delta.
		p := "Counting: one two three four"
		r1 := mock.Reply{ID: "resp_a", Text: p, Stop: "max_tokens", Usage: mock.Usage{Input: 1, Output: 5}}
		r2 := mock.Reply{ID: "resp_b", Text: "three four five six.", Usage: mock.Usage{Input: 2, Output: 3}}
		out, parts, _, sp := rcRun(t, rcStep{sse: rcMock(t, r1, true, 1)}, rcStep{sse: rcMock(t, r2, true, 1), cont: true})
		evs := respParseSpliced(t, parts[2])
		require.Len(t, evs, 1)
		require.Equal(t, " five six.", evs[0].ev.Delta)
		_, acc := rcAgent(t, out, sp)
		require.Equal(t, p+" five six.", acc.Text)
	})
	t.Run("long continuation", func(t *testing.T) {
		p := strings.Repeat("word ", 100) + "and the end of the first"
		c := "the end of the first part; " + strings.Repeat("more words ", 80)
		r1 := mock.Reply{ID: "resp_a", Text: p, Stop: "max_tokens", Usage: mock.Usage{Input: 1, Output: 5}}
		r2 := mock.Reply{ID: "resp_b", Text: c, Usage: mock.Usage{Input: 2, Output: 3}}
		out, parts, _, sp := rcRun(t, rcStep{sse: rcMock(t, r1, true, 16)}, rcStep{sse: rcMock(t, r2, true, 16), cont: true})
		evs := respParseSpliced(t, parts[2])
		require.Greater(t, len(evs), 20, "after the seam, deltas pass as they come")
		_, acc := rcAgent(t, out, sp)
		require.Equal(t, p+" part; "+strings.Repeat("more words ", 80), acc.Text)
	})
}

func TestResponsesSpliceNoContinuationUnchanged(t *testing.T) {
	// Whole streams that are not continued reach the agent byte for byte,
	// whatever their shape.
	for i, r := range []mock.Reply{
		{ID: "a", Text: "Plain text."},
		{ID: "b", Text: "Cut sh", Stop: "max_tokens"},
		{ID: "c", Text: "With thinking.", Thinking: &mock.Thinking{Text: "hmm", Signature: "S"}},
		{ID: "d", Text: "Then calls.", ToolCalls: []mock.ToolCall{{ID: "c1", Name: "f", Args: `{"a":1}`}, {ID: "c2", Name: "p", Args: "x", Custom: true}}},
		{ID: "e", ToolCalls: []mock.ToolCall{{ID: "c1", Name: "f", Args: `{}`}}},
	} {
		for _, crlf := range []bool{false, true} {
			in := rcMock(t, r, true, 3)
			if crlf {
				in = bytes.ReplaceAll(in, []byte("\n"), []byte("\r\n"))
			}
			out, _, _, sp := rcRun(t, rcStep{sse: in})
			require.Equal(t, string(in), string(out), "reply %d", i)
			require.Equal(t, bytes.Count(in, []byte("data:")), sp.Events())
		}
	}
	// A ping after the text's close events keeps its place.
	in := string(apitest.Fixture(t, Descriptor, "splice_text.sse"))
	at := strings.Index(in, "event: response.completed")
	in = in[:at] + ": ping\n\nevent: keepalive\ndata:\n\n" + in[at:]
	out, _, _, _ := rcRun(t, rcStep{sse: []byte(in)})
	require.Equal(t, in, string(out))
	// A follow-up after the text: its events come after the held ones,
	// numbered as before.
	sp := Descriptor.NewSplicer()
	first := respFeedSplice(t, sp, apitest.Fixture(t, Descriptor, "splice_text.sse"))
	require.NotContains(t, string(first), "output_text.done")
	b, err := sp.Release(nil, nil)
	require.NoError(t, err)
	require.Empty(t, b)
	sp.Next()
	next := respFeedSplice(t, sp, apitest.Fixture(t, Descriptor, "splice_followup.sse"))
	require.True(t, strings.HasPrefix(string(next), "event: response.output_text.done\n"), "the held events go first")
	fin, err := sp.Finish()
	require.NoError(t, err)
	respCheckSpliced(t, respParseSpliced(t, append(append(first, next...), fin...)))
}

func TestResponsesSpliceContinueExtraPart(t *testing.T) {
	// A continuation's message with a refusal part after its text: the part
	// joins the continued message after the text.
	var w1 respSSE
	msg := func(id, status, content string) string {
		return `{"id":"` + id + `","type":"message","status":"` + status + `","content":[` + content + `],"role":"assistant"}`
	}
	w1.ev("response.created", `,"response":{"id":"r1","status":"in_progress","output":[]}`)
	w1.ev("response.output_item.added", `,"output_index":0,"item":`+msg("m1", "in_progress", ""))
	w1.ev("response.content_part.added", `,"item_id":"m1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}`)
	w1.ev("response.output_text.delta", `,"item_id":"m1","output_index":0,"content_index":0,"delta":"I can tell you that"`)
	w1.ev("response.output_text.done", `,"item_id":"m1","output_index":0,"content_index":0,"text":"I can tell you that"`)
	w1.ev("response.content_part.done", `,"item_id":"m1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":"I can tell you that"}`)
	w1.ev("response.output_item.done", `,"output_index":0,"item":`+msg("m1", "incomplete", `{"type":"output_text","annotations":[],"text":"I can tell you that"}`))
	w1.ev("response.incomplete", `,"response":{"id":"r1","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[`+
		msg("m1", "incomplete", `{"type":"output_text","annotations":[],"text":"I can tell you that"}`)+`],"usage":{"input_tokens":1,"output_tokens":2,"total_tokens":3}}`)
	var w2 respSSE
	full := `{"type":"output_text","annotations":[],"text":" much."},{"type":"refusal","refusal":"No more."}`
	w2.ev("response.created", `,"response":{"id":"r2","status":"in_progress","output":[]}`)
	w2.ev("response.output_item.added", `,"output_index":0,"item":`+msg("m2", "in_progress", ""))
	w2.ev("response.content_part.added", `,"item_id":"m2","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}`)
	w2.ev("response.output_text.delta", `,"item_id":"m2","output_index":0,"content_index":0,"delta":" much."`)
	w2.ev("response.output_text.done", `,"item_id":"m2","output_index":0,"content_index":0,"text":" much."`)
	w2.ev("response.content_part.done", `,"item_id":"m2","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":" much."}`)
	w2.ev("response.content_part.added", `,"item_id":"m2","output_index":0,"content_index":1,"part":{"type":"refusal","refusal":""}`)
	w2.ev("response.refusal.delta", `,"item_id":"m2","output_index":0,"content_index":1,"delta":"No more."`)
	w2.ev("response.refusal.done", `,"item_id":"m2","output_index":0,"content_index":1,"refusal":"No more."`)
	w2.ev("response.content_part.done", `,"item_id":"m2","output_index":0,"content_index":1,"part":{"type":"refusal","refusal":"No more."}`)
	w2.ev("response.output_item.done", `,"output_index":0,"item":`+msg("m2", "completed", full))
	w2.ev("response.completed", `,"response":{"id":"r2","status":"completed","output":[`+msg("m2", "completed", full)+`],"usage":{"input_tokens":4,"output_tokens":5,"total_tokens":9}}`)
	out, parts, replies, sp := rcRun(t, rcStep{sse: []byte(w1.b.String())}, rcStep{sse: []byte(w2.b.String()), cont: true})
	// The text's part closes before the refusal part starts; the message
	// closes when the continuation's does.
	require.Equal(t, []string{"response.output_text.delta", "response.output_text.done", "response.content_part.done",
		"response.content_part.added", "response.refusal.delta", "response.refusal.done", "response.content_part.done",
		"response.output_item.done"}, rcNames(respParseSpliced(t, parts[2])))
	for _, e := range respParseSpliced(t, parts[2]) {
		require.Equal(t, "m1", gjson.Get(e.data, "item_id").String()+gjson.Get(e.data, "item.id").String())
	}
	resp, acc := rcAgent(t, out, sp)
	require.Equal(t, "I can tell you that much.", acc.Text)
	require.Len(t, resp.Output, 1)
	require.Len(t, resp.Output[0].Content, 2)
	require.Equal(t, "No more.", resp.Output[0].Content[1].Refusal)
	require.Equal(t, "completed", string(resp.Output[0].Status))
	merged, err := respCC.ContinueReply(replies[0], replies[1])
	require.NoError(t, err)
	evs := respParseSpliced(t, out)
	require.JSONEq(t, string(merged), gjson.Get(evs[len(evs)-1].data, "response").Raw)
}
