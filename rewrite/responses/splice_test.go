package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/openai/openai-go/v3/responses"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// respFeedSplice feeds one upstream stream, read one byte at a time, and
// returns what the splicer emitted.
func respFeedSplice(t *testing.T, sp rewrite.StreamSplicer, sse []byte) []byte {
	t.Helper()
	rd := rewrite.NewReader(iotest.OneByteReader(bytes.NewReader(sse)))
	var out []byte
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		b, err := sp.Feed(&ev)
		require.NoError(t, err)
		out = append(out, b...)
	}
}

// respSplicedEvent is one event the agent received, decoded with openai-go.
type respSplicedEvent struct {
	name string
	data string
	ev   responses.ResponseStreamEventUnion
}

func respParseSpliced(t *testing.T, out []byte) []respSplicedEvent {
	t.Helper()
	rd := rewrite.NewReader(iotest.OneByteReader(bytes.NewReader(out)))
	var evs []respSplicedEvent
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			return evs
		}
		require.NoError(t, err)
		d := bytes.TrimSpace(ev.Data)
		if len(d) == 0 || bytes.Equal(d, rewrite.DoneData) {
			continue
		}
		se := respSplicedEvent{name: string(ev.Name), data: string(ev.Data)}
		require.NoError(t, json.Unmarshal(ev.Data, &se.ev), "%s", ev.Data)
		require.Equal(t, se.name, se.ev.Type, "event line and type agree")
		evs = append(evs, se)
	}
}

// respCheckSpliced checks that evs form one valid Responses stream: sequence
// numbers rising by 1, one response.created, output items numbered 0, 1, …
// in the order they were added and referenced consistently, one terminal
// event last whose output lists exactly those items. It returns the
// terminal event.
func respCheckSpliced(t *testing.T, evs []respSplicedEvent) responses.ResponseStreamEventUnion {
	t.Helper()
	require.NotEmpty(t, evs)
	created := 0
	index := map[string]int64{} // item id -> output_index
	var ids []string
	for i, e := range evs {
		require.Equal(t, evs[0].ev.SequenceNumber+int64(i), e.ev.SequenceNumber, "event %d (%s)", i, e.name)
		switch e.name {
		case "response.created":
			created++
		case "response.output_item.added":
			require.Equal(t, int64(len(ids)), e.ev.OutputIndex, "items are added in output order")
			index[e.ev.Item.ID] = e.ev.OutputIndex
			ids = append(ids, e.ev.Item.ID)
		case "response.output_item.done":
			require.Equal(t, index[e.ev.Item.ID], e.ev.OutputIndex, "%s", e.ev.Item.ID)
		case "response.completed", "response.incomplete":
			require.Equal(t, len(evs)-1, i, "terminal event last")
		}
		if id := gjson.Get(e.data, "item_id"); id.Exists() {
			want, ok := index[id.Str]
			require.True(t, ok, "item %s referenced before it was added", id.Str)
			require.Equal(t, want, e.ev.OutputIndex, "%s of %s", e.name, id.Str)
		}
	}
	require.Equal(t, 1, created)
	last := evs[len(evs)-1].ev
	require.Len(t, last.Response.Output, len(ids))
	for k, id := range ids {
		require.Equal(t, id, last.Response.Output[k].ID, "output[%d]", k)
	}
	return last
}

func TestResponsesSplicePassThrough(t *testing.T) {
	for _, name := range []string{"splice_text.sse", "stream.sse", "splice_incomplete.sse", "splice_calls.sse", "splice_custom.sse"} {
		for _, crlf := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/crlf=%v", name, crlf), func(t *testing.T) {
				in := apitest.Fixture(t, Descriptor, name)
				if crlf {
					in = bytes.ReplaceAll(in, []byte("\n"), []byte("\r\n"))
				}
				sp := Descriptor.NewSplicer()
				out := respFeedSplice(t, sp, in)
				require.True(t, sp.Done())
				reply, err := sp.Reply()
				require.NoError(t, err)
				rd := rewrite.NewReader(bytes.NewReader(in))
				var last rewrite.Event
				for ev, err := rd.Next(); err == nil; ev, err = rd.Next() {
					last = rewrite.Event{Data: bytes.Clone(ev.Data)}
				}
				require.Equal(t, gjson.GetBytes(last.Data, "response").Raw, string(reply))
				b, err := sp.Release(nil, nil)
				require.NoError(t, err)
				out = append(out, b...)
				b, err = sp.Finish()
				require.NoError(t, err)
				out = append(out, b...)
				require.Equal(t, string(in), string(out))
				require.Equal(t, bytes.Count(in, []byte("data:")), sp.Events())
				b, err = sp.Finish()
				require.NoError(t, err)
				require.Empty(t, b, "Finish writes once")
			})
		}
	}
}

func TestResponsesSpliceRemove(t *testing.T) {
	sp := Descriptor.NewSplicer()
	out := respFeedSplice(t, sp, apitest.Fixture(t, Descriptor, "splice_calls.sse"))
	require.True(t, sp.Done())
	require.NotContains(t, string(out), "function_call", "calls are held until Release")
	require.Contains(t, string(out), `"delta":"me look."`, "text passes at once")
	require.NotContains(t, string(out), "response.output_text.done", "the last text's close events are held")
	reply, err := sp.Reply()
	require.NoError(t, err)
	r, err := responsesCodec{views: apitest.Views}.ParseReply(reply)
	require.NoError(t, err)
	require.Len(t, r.ToolCalls, 2)

	b, err := sp.Release([]int{0}, nil)
	require.NoError(t, err)
	require.NotContains(t, string(b), `"fc_a"`)
	require.Contains(t, string(b), "call_b")
	out = append(out, b...)
	b, err = sp.Finish()
	require.NoError(t, err)
	out = append(out, b...)

	evs := respParseSpliced(t, out)
	require.EqualValues(t, 0, evs[0].ev.SequenceNumber)
	last := respCheckSpliced(t, evs)
	require.Equal(t, "response.completed", last.Type)
	require.Equal(t, "resp_calls", last.Response.ID)
	require.Len(t, last.Response.Output, 2)
	require.Equal(t, "message", last.Response.Output[0].Type)
	require.Equal(t, "function_call", last.Response.Output[1].Type)
	require.Equal(t, "call_b", last.Response.Output[1].CallID)
	require.EqualValues(t, 100, last.Response.Usage.InputTokens)
	require.EqualValues(t, 30, last.Response.Usage.OutputTokens)
	require.EqualValues(t, 130, last.Response.Usage.TotalTokens)
	for _, e := range evs {
		if strings.Contains(e.data, "fc_b") && gjson.Get(e.data, "output_index").Exists() {
			require.EqualValues(t, 1, e.ev.OutputIndex, e.name)
		}
	}
	// The final response is EditReply's.
	edited, err := responsesCodec{views: apitest.Views}.EditReply(reply, []int{0}, nil)
	require.NoError(t, err)
	require.JSONEq(t, string(edited), gjson.Get(evs[len(evs)-1].data, "response").Raw)
	require.Equal(t, len(evs), sp.Events())
}

func TestResponsesSpliceFirst(t *testing.T) {
	sp := Descriptor.NewSplicer()
	out := respFeedSplice(t, sp, apitest.Fixture(t, Descriptor, "splice_calls.sse"))
	b, err := sp.Release(nil, []int{1})
	require.NoError(t, err)
	out = append(out, b...)
	b, err = sp.Finish()
	require.NoError(t, err)
	out = append(out, b...)
	last := respCheckSpliced(t, respParseSpliced(t, out))
	require.Len(t, last.Response.Output, 3)
	require.Equal(t, "msg_2", last.Response.Output[0].ID)
	require.Equal(t, "call_b", last.Response.Output[1].CallID)
	require.Equal(t, "call_a", last.Response.Output[2].CallID)
	// Bad plans are errors, and Release may then be retried.
	sp = Descriptor.NewSplicer()
	respFeedSplice(t, sp, apitest.Fixture(t, Descriptor, "splice_calls.sse"))
	_, err = sp.Release([]int{5}, nil)
	require.Error(t, err)
	_, err = sp.Release([]int{0}, []int{0})
	require.Error(t, err)
	_, err = sp.Release(nil, nil)
	require.NoError(t, err)
	_, err = sp.Release(nil, nil)
	require.Error(t, err, "one Release per stream")
}

func TestResponsesSpliceFollowUp(t *testing.T) {
	sp := Descriptor.NewSplicer()
	out := respFeedSplice(t, sp, apitest.Fixture(t, Descriptor, "splice_topic.sse"))
	require.True(t, sp.Done())
	reply, err := sp.Reply()
	require.NoError(t, err)
	require.Equal(t, "resp_topic", gjson.GetBytes(reply, "id").Str)
	b, err := sp.Release([]int{0}, nil)
	require.NoError(t, err)
	require.Empty(t, b)
	out = append(out, b...)

	sp.Next()
	require.False(t, sp.Done())
	_, err = sp.Reply()
	require.Error(t, err)
	out = append(out, respFeedSplice(t, sp, apitest.Fixture(t, Descriptor, "splice_followup.sse"))...)
	require.True(t, sp.Done())
	reply2, err := sp.Reply()
	require.NoError(t, err)
	require.Equal(t, "resp_follow", gjson.GetBytes(reply2, "id").Str)
	b, err = sp.Release(nil, nil)
	require.NoError(t, err)
	out = append(out, b...)
	b, err = sp.Finish()
	require.NoError(t, err)
	out = append(out, b...)

	evs := respParseSpliced(t, out)
	require.EqualValues(t, 0, evs[0].ev.SequenceNumber)
	last := respCheckSpliced(t, evs)
	require.Equal(t, "resp_topic", evs[0].ev.Response.ID, "the first stream's preamble")
	require.NotContains(t, string(out), "create_new_topic")
	require.Equal(t, "response.completed", last.Type)
	require.Equal(t, "resp_follow", last.Response.ID)
	require.Len(t, last.Response.Output, 1)
	require.Equal(t, "msg_3", last.Response.Output[0].ID)
	require.EqualValues(t, 260, last.Response.Usage.InputTokens)
	require.EqualValues(t, 22, last.Response.Usage.OutputTokens)
	require.EqualValues(t, 7, last.Response.Usage.OutputTokensDetails.ReasoningTokens)
	require.EqualValues(t, 282, last.Response.Usage.TotalTokens)
	require.Equal(t, "Topic started.", last.Response.OutputText())
}

func TestResponsesSpliceFollowUpKeepsCalls(t *testing.T) {
	// stream 1: [message, A, B] keeping B first; stream 2: incomplete message.
	sp := Descriptor.NewSplicer()
	out := respFeedSplice(t, sp, apitest.Fixture(t, Descriptor, "splice_calls.sse"))
	b, err := sp.Release(nil, []int{1})
	require.NoError(t, err)
	out = append(out, b...)
	sp.Next()
	out = append(out, respFeedSplice(t, sp, apitest.Fixture(t, Descriptor, "splice_incomplete.sse"))...)
	b, err = sp.Release(nil, nil)
	require.NoError(t, err)
	out = append(out, b...)
	b, err = sp.Finish()
	require.NoError(t, err)
	out = append(out, b...)
	last := respCheckSpliced(t, respParseSpliced(t, out))
	require.Equal(t, "response.incomplete", last.Type)
	require.Equal(t, "resp_inc", last.Response.ID)
	require.Equal(t, "max_output_tokens", string(last.Response.IncompleteDetails.Reason))
	var got []string
	for _, it := range last.Response.Output {
		got = append(got, it.ID)
	}
	require.Equal(t, []string{"msg_2", "fc_b", "fc_a", "msg_4"}, got)
	require.EqualValues(t, 33, last.Response.Usage.OutputTokens)
	require.EqualValues(t, 10, last.Response.Usage.InputTokens)
}

// respSSE writes Responses events with rising sequence numbers.
type respSSE struct {
	b   strings.Builder
	seq int
}

func (w *respSSE) ev(typ, members string) {
	fmt.Fprintf(&w.b, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d%s}\n\n", typ, typ, w.seq, members)
	w.seq++
}

func TestResponsesSpliceInterleaved(t *testing.T) {
	// A call before a message: the message reaches the agent first, so it
	// is output 0 and the call output 1, in the events and the response.
	var w respSSE
	w.ev("response.created", `,"response":{"id":"r1","status":"in_progress","output":[]}`)
	fc := `{"id":"fc_1","type":"function_call","status":"completed","arguments":"{}","call_id":"c1","name":"ls"}`
	msg := `{"id":"m1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}]}`
	w.ev("response.output_item.added", `,"output_index":0,"item":`+fc)
	w.ev("response.function_call_arguments.delta", `,"item_id":"fc_1","output_index":0,"delta":"{}"`)
	w.ev("response.output_item.added", `,"output_index":1,"item":`+msg)
	w.ev("response.output_text.delta", `,"item_id":"m1","output_index":1,"content_index":0,"delta":"hi"`)
	w.ev("response.output_item.done", `,"output_index":1,"item":`+msg)
	w.ev("response.output_item.done", `,"output_index":0,"item":`+fc)
	w.ev("response.completed", `,"response":{"id":"r1","status":"completed","output":[`+fc+`,`+msg+`],"usage":{"input_tokens":1,"output_tokens":2,"total_tokens":3}}`)
	sp := Descriptor.NewSplicer()
	out := respFeedSplice(t, sp, []byte(w.b.String()))
	b, err := sp.Release(nil, nil)
	require.NoError(t, err)
	out = append(out, b...)
	b, err = sp.Finish()
	require.NoError(t, err)
	out = append(out, b...)
	last := respCheckSpliced(t, respParseSpliced(t, out))
	require.Equal(t, "m1", last.Response.Output[0].ID)
	require.Equal(t, "fc_1", last.Response.Output[1].ID)
}

func TestResponsesSpliceUnstreamedCall(t *testing.T) {
	// The terminal response lists the streamed call at another position
	// (matched by id) and a call that was never streamed (sent from the
	// response's copy).
	var w respSSE
	w.ev("response.created", `,"response":{"id":"r1","status":"in_progress","output":[]}`)
	fc1 := `{"id":"fc_1","type":"function_call","status":"completed","arguments":"{}","call_id":"c1","name":"ls"}`
	fc2 := `{"id":"fc_2","type":"function_call","status":"completed","arguments":"{}","call_id":"c2","name":"pwd"}`
	msg := `{"id":"m1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}]}`
	w.ev("response.output_item.added", `,"output_index":0,"item":`+msg)
	w.ev("response.output_item.done", `,"output_index":0,"item":`+msg)
	w.ev("response.output_item.added", `,"output_index":1,"item":`+fc1)
	w.ev("response.output_item.done", `,"output_index":1,"item":`+fc1)
	w.ev("response.completed", `,"response":{"id":"r1","status":"completed","output":[`+fc1+`,`+msg+`,`+fc2+`]}`)
	sp := Descriptor.NewSplicer()
	out := respFeedSplice(t, sp, []byte(w.b.String()))
	b, err := sp.Release(nil, []int{1})
	require.NoError(t, err)
	out = append(out, b...)
	b, err = sp.Finish()
	require.NoError(t, err)
	out = append(out, b...)
	last := respCheckSpliced(t, respParseSpliced(t, out))
	var got []string
	for _, it := range last.Response.Output {
		got = append(got, it.ID)
	}
	require.Equal(t, []string{"m1", "fc_2", "fc_1"}, got)

	// A terminal response with an empty output gets the streamed items.
	w = respSSE{}
	w.ev("response.output_item.added", `,"output_index":0,"item":`+fc1)
	w.ev("response.output_item.done", `,"output_index":0,"item":`+fc1)
	w.ev("response.completed", `,"response":{"id":"r1","status":"completed","output":[]}`)
	sp = Descriptor.NewSplicer()
	respFeedSplice(t, sp, []byte(w.b.String()))
	reply, err := sp.Reply()
	require.NoError(t, err)
	r, err := responsesCodec{views: apitest.Views}.ParseReply(reply)
	require.NoError(t, err)
	require.Len(t, r.ToolCalls, 1)
	b, err = sp.Release([]int{0}, nil)
	require.NoError(t, err)
	require.Empty(t, b)
}

func TestResponsesSpliceError(t *testing.T) {
	in := apitest.Fixture(t, Descriptor, "splice_error.sse")
	sp := Descriptor.NewSplicer()
	out := respFeedSplice(t, sp, in)
	require.True(t, sp.Done())
	require.Equal(t, string(in), string(out), "the error is forwarded at once")
	_, err := sp.Reply()
	require.Error(t, err)
	b, err := sp.Release(nil, nil)
	require.NoError(t, err)
	require.Empty(t, b)
	b, err = sp.Finish()
	require.NoError(t, err)
	require.Empty(t, b)

	// An error on a follow-up continues the numbering.
	sp = Descriptor.NewSplicer()
	out = respFeedSplice(t, sp, apitest.Fixture(t, Descriptor, "splice_topic.sse"))
	_, err = sp.Release([]int{0}, nil)
	require.NoError(t, err)
	sp.Next()
	out = append(out, respFeedSplice(t, sp, in)...)
	b, err = sp.Finish()
	require.NoError(t, err)
	require.Empty(t, b)
	evs := respParseSpliced(t, out)
	for i, e := range evs {
		require.EqualValues(t, i, e.ev.SequenceNumber)
	}
	require.Equal(t, "error", evs[len(evs)-1].name)
	require.Equal(t, "boom", evs[len(evs)-1].ev.Message)

	// response.failed is forwarded too, and Reply gives its response.
	var w respSSE
	w.ev("response.created", `,"response":{"id":"r1","status":"in_progress","output":[]}`)
	w.ev("response.failed", `,"response":{"id":"r1","status":"failed","output":[],"error":{"code":"server_error","message":"x"}}`)
	sp = Descriptor.NewSplicer()
	out = respFeedSplice(t, sp, []byte(w.b.String()))
	require.Equal(t, w.b.String(), string(out))
	require.True(t, sp.Done())
	reply, err := sp.Reply()
	require.NoError(t, err)
	require.Equal(t, "failed", gjson.GetBytes(reply, "status").Str)
}

func TestResponsesSpliceUnfinished(t *testing.T) {
	in := apitest.Fixture(t, Descriptor, "splice_calls.sse")
	cut := in[:bytes.LastIndex(in, []byte("event: response.completed"))]
	sp := Descriptor.NewSplicer()
	respFeedSplice(t, sp, cut)
	require.False(t, sp.Done())
	_, err := sp.Reply()
	require.Error(t, err)
	_, err = sp.Release([]int{0}, nil)
	require.Error(t, err)
	b, err := sp.Release(nil, nil)
	require.NoError(t, err)
	require.Contains(t, string(b), `"fc_a"`, "held calls go out as they are")
	_, err = sp.Finish()
	require.Error(t, err)

	// An event cut by the end of the stream still reaches the agent whole.
	sp = Descriptor.NewSplicer()
	out := respFeedSplice(t, sp, []byte("event: foo\ndata: {\"type\":\"foo\",\"sequence_number\":3}"))
	require.Equal(t, "event: foo\ndata: {\"type\":\"foo\",\"sequence_number\":3}\n\n", string(out))
}

func TestResponsesSpliceMalformed(t *testing.T) {
	for _, data := range []string{
		`{bad`, `[1]`, `"x"`,
		`{"type":"response.output_text.delta","output_index":-1}`,
		`{"type":"response.output_text.delta","output_index":"1"}`,
		`{"type":"foo","sequence_number":1,"sequence_number":2}`,
		`{"type":"response.completed","response":[]}`,
	} {
		sp := Descriptor.NewSplicer()
		_, err := sp.Feed(&rewrite.Event{Name: []byte("x"), Data: []byte(data), Raw: []byte("data: " + data + "\n\n")})
		require.Error(t, err, data)
	}
	// [DONE] is held and sent after the terminal event.
	in := string(apitest.Fixture(t, Descriptor, "splice_text.sse")) + "data: [DONE]\n\n"
	sp := Descriptor.NewSplicer()
	out := respFeedSplice(t, sp, []byte(in))
	require.NotContains(t, string(out), "[DONE]")
	b, err := sp.Finish()
	require.NoError(t, err)
	require.Equal(t, in, string(out)+string(b))
}

// FuzzResponsesSplicer feeds arbitrary event sequences; ctrl drives
// Release's remove/first and whether a follow-up (Next) or a continuation
// (Continue) starts after each terminal event.
func FuzzResponsesSplicer(f *testing.F) {
	for _, name := range []string{"splice_text.sse", "splice_calls.sse", "splice_topic.sse", "splice_incomplete.sse", "splice_error.sse", "stream.sse", "splice_custom.sse"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "openai_responses", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, []byte{0})
		f.Add(b, []byte{1, 0, 1})
		f.Add(b, []byte{2, 9, 1, 0})
	}
	topic, _ := os.ReadFile(filepath.Join("..", "testdata", "openai_responses", "splice_topic.sse"))
	follow, _ := os.ReadFile(filepath.Join("..", "testdata", "openai_responses", "splice_followup.sse"))
	calls, _ := os.ReadFile(filepath.Join("..", "testdata", "openai_responses", "splice_calls.sse"))
	f.Add(append(bytes.Clone(topic), follow...), []byte{1, 0, 1, 0})
	f.Add(append(bytes.Clone(calls), follow...), []byte{1, 9, 1, 0})
	f.Add(append(bytes.Clone(calls), calls...), []byte{2, 0, 1, 1, 1, 0})
	small := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"r\",\"output\":[]}}\n\n" +
		"data: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"f\"}}\n\n" +
		"data: {\"type\":\"response.output_text.delta\",\"sequence_number\":2,\"output_index\":1,\"item_id\":\"m\",\"delta\":\"x\"}\n\n" +
		"data: {\"type\":\"response.completed\",\"sequence_number\":3,\"response\":{\"id\":\"r\",\"output\":[{\"type\":\"function_call\",\"id\":\"f\"},{\"type\":\"function_call\"}]}}\n\n"
	f.Add([]byte(small), []byte{1, 8, 1})
	f.Add([]byte(small+small), []byte{1, 0, 1, 0})
	f.Add([]byte(small+"data: [DONE]\r\n\r\n: ping\n\n"), []byte{0})
	custom, _ := os.ReadFile(filepath.Join("..", "testdata", "openai_responses", "splice_custom.sse"))
	f.Add(append(bytes.Clone(topic), custom...), []byte{1, 0, 1, 1, 1})
	f.Add(append(bytes.Clone(custom), follow...), []byte{1, 1, 1, 0})
	f.Add(append(bytes.Clone(custom), custom...), []byte{2, 9, 0, 1, 1, 8})
	smallCustom := "data: {\"type\":\"response.output_item.added\",\"sequence_number\":0,\"output_index\":0,\"item\":{\"type\":\"custom_tool_call\",\"id\":\"c\",\"input\":\"\"}}\n\n" +
		"data: {\"type\":\"response.custom_tool_call_input.delta\",\"sequence_number\":1,\"item_id\":\"c\",\"delta\":\"x\\n\"}\n\n" +
		"data: {\"type\":\"response.custom_tool_call_input.done\",\"sequence_number\":2,\"output_index\":3,\"input\":\"x\\n\"}\n\n" +
		"data: {\"type\":\"response.completed\",\"sequence_number\":3,\"response\":{\"output\":[{\"type\":\"function_call\",\"id\":\"c\"},{\"type\":\"custom_tool_call\",\"input\":\"y\"}]}}\n\n"
	f.Add([]byte(smallCustom), []byte{1, 1, 1})
	f.Add([]byte(smallCustom+small), []byte{2, 8, 1, 1, 0})
	// Continuations (ctrl 3 after a Release).
	inc, _ := os.ReadFile(filepath.Join("..", "testdata", "openai_responses", "splice_incomplete.sse"))
	text, _ := os.ReadFile(filepath.Join("..", "testdata", "openai_responses", "splice_text.sse"))
	f.Add(append(bytes.Clone(inc), follow...), []byte{0, 3, 0})
	f.Add(append(append(bytes.Clone(inc), inc...), text...), []byte{0, 3, 0, 3, 0})
	f.Add(append(bytes.Clone(calls), text...), []byte{2, 0, 1, 3, 0})
	f.Add(append(bytes.Clone(calls), calls...), []byte{1, 0, 3, 0})
	f.Add(append(bytes.Clone(inc), custom...), []byte{0, 3, 1, 0})
	f.Add(append(bytes.Clone(topic), inc...), []byte{1, 0, 3, 0})
	f.Add(append(bytes.Clone(inc), []byte(small)...), []byte{0, 3, 0})
	cut := bytes.ReplaceAll(bytes.Clone(inc), []byte(`"delta":"sho"`), []byte(`"delta":""`))
	f.Add(append(cut, text...), []byte{0, 3, 1})

	f.Fuzz(func(t *testing.T, sse, ctrl []byte) {
		next := func() byte {
			if len(ctrl) == 0 {
				return 0
			}
			c := ctrl[0]
			ctrl = ctrl[1:]
			return c
		}
		sp := Descriptor.NewSplicer()
		var out []byte
		released := false
		rd := rewrite.NewReader(iotest.OneByteReader(bytes.NewReader(sse)), rewrite.WithMaxEventSize(1<<16))
		for {
			ev, err := rd.Next()
			if err != nil {
				break
			}
			b, _ := sp.Feed(&ev)
			out = append(out, b...)
			if !sp.Done() || released {
				continue
			}
			_, _ = sp.Reply()
			var remove, first []int
			for n := next() % 4; n > 0; n-- {
				v := next()
				if v&8 != 0 {
					first = append(first, int(v&7))
				} else {
					remove = append(remove, int(v&7))
				}
			}
			b, err = sp.Release(remove, first)
			if err != nil {
				b, _ = sp.Release(nil, nil)
			}
			out = append(out, b...)
			released = true
			if c := next(); c&1 == 1 {
				if c&2 != 0 {
					sp.(rewrite.ContinueSplicer).Continue()
				} else {
					sp.Next()
				}
				released = false
			}
		}
		b, _ := sp.Finish()
		out = append(out, b...)

		rd = rewrite.NewReader(bytes.NewReader(out))
		prev := int64(-1)
		for {
			ev, err := rd.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			d := bytes.TrimSpace(ev.Data)
			if len(d) == 0 || bytes.Equal(d, rewrite.DoneData) {
				continue
			}
			require.True(t, json.Valid(ev.Data), "%q", ev.Data)
			var m map[string]json.RawMessage
			if json.Unmarshal(ev.Data, &m) != nil {
				continue // valid JSON but not an object: not ours to number
			}
			if s, ok := m["sequence_number"]; ok {
				var n int64
				require.NoError(t, json.Unmarshal(s, &n), "%q", ev.Data)
				require.Greater(t, n, prev, "%q", ev.Data)
				prev = n
			}
		}
	})
}

// respRawEvents returns the raw events of an SSE stream.
func respRawEvents(t *testing.T, sse []byte) []string {
	t.Helper()
	rd := rewrite.NewReader(bytes.NewReader(sse))
	var out []string
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out = append(out, string(ev.Raw))
	}
}

// respRenumbered returns raw with its sequence_number and output_index
// values replaced, as the splicer renumbers a released event.
func respRenumbered(t *testing.T, raw string, seq, out int) string {
	t.Helper()
	data := raw[strings.Index(raw, "data: ")+len("data: "):]
	data = data[:strings.IndexByte(data, '\n')]
	s, o := gjson.Get(data, "sequence_number"), gjson.Get(data, "output_index")
	require.True(t, s.Exists() && o.Exists() && s.Index < o.Index, "%s", data)
	nd := data[:s.Index] + fmt.Sprint(seq) + data[s.Index+len(s.Raw):o.Index] + fmt.Sprint(out) + data[o.Index+len(o.Raw):]
	return strings.Replace(raw, data, nd, 1)
}

// TestResponsesSpliceCustom splices a stream whose reply is [message,
// custom apply_patch call, create_new_topic function call] (call indices
// 0 = custom, 1 = function): held custom calls are released byte for byte
// or renumbered exactly like function calls.
func TestResponsesSpliceCustom(t *testing.T) {
	in := apitest.Fixture(t, Descriptor, "splice_custom.sse")
	raw := respRawEvents(t, in)
	require.Len(t, raw, 19)
	closes, custom, fn := raw[5:8], raw[8:13], raw[13:18]
	for _, e := range custom {
		require.Contains(t, e, `"output_index":1`)
	}
	run := func(t *testing.T, remove, first []int) (held, released string, evs []respSplicedEvent, last responses.ResponseStreamEventUnion) {
		sp := Descriptor.NewSplicer()
		out := respFeedSplice(t, sp, in)
		require.True(t, sp.Done())
		require.Equal(t, strings.Join(raw[:5], ""), string(out), "text passes at once, its close events and calls are held")
		reply, err := sp.Reply()
		require.NoError(t, err)
		view, err := responsesCodec{views: apitest.Views}.ParseReply(reply)
		require.NoError(t, err)
		require.Len(t, view.ToolCalls, 2)
		require.True(t, view.ToolCalls[0].Freeform)
		require.Equal(t, "apply_patch", view.ToolCalls[0].Name)
		require.Equal(t, respPatchArgs, string(view.ToolCalls[0].Args))
		require.Equal(t, "create_new_topic", view.ToolCalls[1].Name)
		b, err := sp.Release(remove, first)
		require.NoError(t, err)
		fin, err := sp.Finish()
		require.NoError(t, err)
		all := append(append(append([]byte(nil), out...), b...), fin...)
		evs = respParseSpliced(t, all)
		last = respCheckSpliced(t, evs)
		edited, err := responsesCodec{views: apitest.Views}.EditReply(reply, remove, first)
		require.NoError(t, err)
		require.JSONEq(t, string(edited), gjson.Get(evs[len(evs)-1].data, "response").Raw, "the final response is EditReply's")
		require.Equal(t, len(evs), sp.Events())
		return string(out), string(b), evs, last
	}

	t.Run("remove the function call", func(t *testing.T) {
		_, released, _, last := run(t, []int{1}, nil)
		require.Equal(t, strings.Join(closes, "")+strings.Join(custom, ""), released,
			"the text's close events, then the custom call's events, byte for byte")
		require.Len(t, last.Response.Output, 2)
		require.Equal(t, "custom_tool_call", last.Response.Output[1].Type)
		ctc := last.Response.Output[1].AsCustomToolCall()
		require.Equal(t, "call_p", ctc.CallID)
		require.Equal(t, "apply_patch", ctc.Name)
		require.Equal(t, respPatch, ctc.Input)
		require.EqualValues(t, 13, last.SequenceNumber)
	})
	t.Run("remove the custom call next to a kept function call", func(t *testing.T) {
		_, released, _, last := run(t, []int{0}, nil)
		want := strings.Join(closes, "")
		for i, e := range fn {
			want += respRenumbered(t, e, 8+i, 1)
		}
		require.Equal(t, want, released)
		require.NotContains(t, released, "apply_patch")
		require.Len(t, last.Response.Output, 2)
		require.Equal(t, "call_t", last.Response.Output[1].CallID)
	})
	t.Run("move the function call first", func(t *testing.T) {
		_, released, evs, last := run(t, nil, []int{1})
		want := strings.Join(closes, "")
		for i, e := range fn {
			want += respRenumbered(t, e, 8+i, 1)
		}
		for i, e := range custom {
			want += respRenumbered(t, e, 13+i, 2)
		}
		require.Equal(t, want, released)
		require.Equal(t, []string{"message", "function_call", "custom_tool_call"},
			[]string{last.Response.Output[0].Type, last.Response.Output[1].Type, last.Response.Output[2].Type})
		var input strings.Builder
		for _, e := range evs {
			if e.name == "response.custom_tool_call_input.delta" {
				require.EqualValues(t, 2, e.ev.OutputIndex)
				input.WriteString(e.ev.Delta)
			}
		}
		require.Equal(t, respPatch, input.String())
	})
	t.Run("remove both", func(t *testing.T) {
		_, released, evs, last := run(t, []int{0, 1}, nil)
		require.Empty(t, released, "the text may still be continued: its close events stay held")
		require.Equal(t, "response.output_item.done", evs[len(evs)-2].name, "Finish writes them")
		require.EqualValues(t, 7, evs[len(evs)-2].ev.SequenceNumber)
		require.Len(t, last.Response.Output, 1)
	})
}

// TestResponsesSpliceCustomFollowUp: the first stream's only call is
// create_new_topic (answered by shepherd); the follow-up carries a custom
// call, which reaches the agent.
func TestResponsesSpliceCustomFollowUp(t *testing.T) {
	sp := Descriptor.NewSplicer()
	out := respFeedSplice(t, sp, apitest.Fixture(t, Descriptor, "splice_topic.sse"))
	b, err := sp.Release([]int{0}, nil)
	require.NoError(t, err)
	require.Empty(t, b)
	sp.Next()
	out = append(out, respFeedSplice(t, sp, apitest.Fixture(t, Descriptor, "splice_custom.sse"))...)
	b, err = sp.Release([]int{1}, nil)
	require.NoError(t, err)
	out = append(out, b...)
	b, err = sp.Finish()
	require.NoError(t, err)
	out = append(out, b...)
	require.NotContains(t, string(out), "create_new_topic")
	evs := respParseSpliced(t, out)
	last := respCheckSpliced(t, evs)
	require.Equal(t, "resp_custom", last.Response.ID)
	require.Len(t, last.Response.Output, 2)
	require.Equal(t, "Patching.", last.Response.OutputText())
	ctc := last.Response.Output[1].AsCustomToolCall()
	require.Equal(t, "custom_tool_call", last.Response.Output[1].Type)
	require.Equal(t, respPatch, ctc.Input)
	require.Equal(t, "call_p", ctc.CallID)
}
