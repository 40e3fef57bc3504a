package anthropic

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// slowBlockDelta is what the general path reads from a content_block_delta
// payload: readAnthropicEvent, blockIndex and readDelta.
func slowBlockDelta(data []byte) (anthropicEventFields, int64, asDelta, error) {
	var f anthropicEventFields
	root, err := rewrite.ParseReplyRoot(data)
	if err != nil {
		return f, 0, asDelta{}, err
	}
	typ, err := readAnthropicEvent(&rewrite.Event{Data: data}, &root, &f)
	if err != nil {
		return f, 0, asDelta{}, err
	}
	if typ != "content_block_delta" {
		return f, 0, asDelta{}, fmt.Errorf("type %q", typ)
	}
	up, err := blockIndex(&f, data)
	if err != nil {
		return f, 0, asDelta{}, err
	}
	d, err := readDelta(f.delta)
	return f, up, d, err
}

// checkFastBlockDelta fails when the fast path takes data and decides
// otherwise than the general path; it reports whether the fast path took it.
func checkFastBlockDelta(t testing.TB, data []byte) bool {
	t.Helper()
	var f anthropicEventFields
	var d asDelta
	up, ok := fastBlockDelta(data, &f, &d)
	if !ok {
		return false
	}
	sf, sup, sd, err := slowBlockDelta(data)
	if err != nil {
		t.Fatalf("fast path took %q, which the general path rejects: %v", data, err)
	}
	if !reflect.DeepEqual(f, sf) || up != sup || !reflect.DeepEqual(d, sd) {
		t.Fatalf("fast path reads %q differently:\nfast %+v %d %+v\nslow %+v %d %+v", data, f, up, d, sf, sup, sd)
	}
	return true
}

func TestFastBlockDelta(t *testing.T) {
	delta := func(index, typ, field, lit string) string {
		return `{"type":"content_block_delta","index":` + index + `,"delta":{"type":"` + typ + `","` + field + `":` + lit + `}}`
	}
	taken := []string{
		delta("0", "text_delta", "text", `"Hello"`),
		delta("0", "text_delta", "text", `""`),
		delta("7", "text_delta", "text", `"a \"quoted\" word\nand a \\ slash \/ \b\f\r\t"`),
		delta("123456789", "text_delta", "text", `"caf\u00e9 \uD83D\uDE00 \u0000"`),
		delta("1", "text_delta", "text", "\"raw UTF-8 é 😀 and invalid \xff\xfe bytes\""),
		delta("2", "input_json_delta", "partial_json", `"{\"path\": \"src/a.go\""`),
		delta("2", "input_json_delta", "partial_json", `""`),
		delta("3", "thinking_delta", "thinking", `"Let me think."`),
		delta("3", "signature_delta", "signature", `"EqQBCkgIARABGAIiQL"`),
	}
	for _, s := range taken {
		require.True(t, checkFastBlockDelta(t, []byte(s)), "fast path should take %q", s)
	}
	left := []string{
		delta("01", "text_delta", "text", `"x"`),            // leading zero: invalid JSON
		delta("-1", "text_delta", "text", `"x"`),            // negative
		delta("1.5", "text_delta", "text", `"x"`),           // fraction
		delta("1e2", "text_delta", "text", `"x"`),           // exponent
		delta("1234567890", "text_delta", "text", `"x"`),    // too many digits
		delta("", "text_delta", "text", `"x"`),              // no index
		delta("0", "text_delta", "text", "\"tab\tin it\""),  // control character
		delta("0", "text_delta", "text", `"bad \x escape"`), // bad escape
		delta("0", "text_delta", "text", `"short \u12"`),    // short \u
		delta("0", "text_delta", "text", `"\u12g4"`),        // not hex
		delta("0", "text_delta", "text", `"trailing \`),     // cut in an escape
		delta("0", "text_delta", "text", `"unterminated`),   // no closing quote
		delta("0", "text_delta", "text", `5`),               // not a string
		delta("0", "text_delta", "thinking", `"x"`),         // another member
		delta("0", "citations_delta", "citation", `{}`),     // not a fast type
		delta("0", "weird_delta", "text", `"x"`),            // unknown type
		delta("0", "text_delta", "text", `"x"`) + " ",       // trailing space
		" " + delta("0", "text_delta", "text", `"x"`),       // leading space
		delta("0", "text_delta", "text", `"x"`) + "}",       // extra brace
		strings.TrimSuffix(delta("0", "text_delta", "text", `"x"`), "}"),
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","extra":1}}`,
		`{"type":"content_block_delta","index":0,"delta":{"text":"x","type":"text_delta"}}`,
		`{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"},"index":0}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"},"index":1}`,
		`{"type":"content_block_delta", "index":0,"delta":{"type":"text_delta","text":"x"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`,
		`{"type":"content_block_delta","index":`,
	}
	for _, s := range left {
		require.False(t, checkFastBlockDelta(t, []byte(s)), "fast path should leave %q", s)
	}
	// Every event of the fixtures and of the bench's agent stream: the
	// fast path takes the text, thinking and argument deltas.
	var evs []rewrite.Event
	for _, name := range []string{"stream.sse", "splice_passthrough.sse", "splice_tools.sse", "splice_followup1.sse",
		"splice_followup2.sse", "splice_mixed.sse"} {
		evs = append(evs, aspEvents(apitest.Fixture(t, Descriptor, name))...)
	}
	n := 0
	for _, ev := range evs {
		if checkFastBlockDelta(t, ev.Data) {
			n++
		}
	}
	require.Greater(t, n, 10)
}

func FuzzFastBlockDelta(f *testing.F) {
	f.Add([]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`))
	f.Add([]byte(`{"type":"content_block_delta","index":12,"delta":{"type":"text_delta","text":"a\nb\"c\u00e9"}}`))
	f.Add([]byte(`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`))
	f.Add([]byte(`{"type":"content_block_delta","index":3,"delta":{"type":"thinking_delta","thinking":"hmm"}}`))
	f.Add([]byte(`{"type":"content_block_delta","index":3,"delta":{"type":"signature_delta","signature":"Eq=="}}`))
	f.Add([]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\u12"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastBlockDelta(t, data)
	})
}

// aspTrace runs a turn over the streams (choice picks Release's remove and
// first, and whether the second stream is a follow-up or a continuation)
// and returns everything the splicer said: its output, replies, errors and
// event counts, in order.
func aspTrace(s1, s2, choice []byte) string {
	var b strings.Builder
	sp := Descriptor.NewSplicer()
	for i, s := range [][]byte{s1, s2} {
		if i == 1 {
			if len(s2) == 0 {
				break
			}
			if len(choice) > 0 && choice[0]&4 != 0 {
				sp.(rewrite.ContinueSplicer).Continue()
			} else {
				sp.Next()
			}
		}
		for _, ev := range aspEvents(s) {
			out, err := sp.Feed(&ev)
			fmt.Fprintf(&b, "feed %q %v\n", out, err)
		}
		reply, err := sp.Reply()
		fmt.Fprintf(&b, "reply %q %v done %v\n", reply, err, sp.Done())
		if err == nil {
			ref, rerr := aspReplyReference(sp.(*anthropicSplicer))
			if rerr != nil || !bytes.Equal(ref, reply) {
				fmt.Fprintf(&b, "REPLY DIFFERS FROM THE REFERENCE: %q %v\n", ref, rerr)
			}
		}
		var remove, first []int
		for j, c := range choice {
			switch {
			case c&1 != 0:
				remove = append(remove, j)
			case c&2 != 0:
				first = append([]int{j}, first...)
			}
		}
		out, err := sp.Release(remove, first)
		fmt.Fprintf(&b, "release %q %v\n", out, err)
	}
	out, err := sp.Finish()
	fmt.Fprintf(&b, "finish %q %v events %d\n", out, err, sp.Events())
	return b.String()
}

// aspReplyReference is Reply as it was before it set content last: every
// member set on the whole message, one after the other.
func aspReplyReference(s *anthropicSplicer) ([]byte, error) {
	if s.failed || !s.started {
		return nil, errors.New("no reply")
	}
	cut := s.done && s.stopReason().Str == "max_tokens"
	content := []byte{'['}
	for i, b := range s.blocks {
		if i > 0 {
			content = append(content, ',')
		}
		out := b.start
		str := func(key string, add []byte) {
			prev := gjson.GetBytes(out, key).Str
			out = setTop(out, key, jsonkit.AppendString(nil, prev+string(add)))
		}
		if b.hasText {
			str("text", b.text)
		}
		if b.hasThinking {
			str("thinking", b.thinking)
		}
		if b.hasSig {
			str("signature", b.signature)
		}
		if len(b.input) > 0 {
			switch {
			case gjson.ValidBytes(b.input):
				out = setTop(out, "input", b.input)
			case cut && i == len(s.blocks)-1:
				out = setTop(out, "input", []byte("{}"))
			default:
				return nil, errors.New("bad input")
			}
		} else if gjson.GetBytes(out, "type").Str == "tool_use" && !gjson.GetBytes(out, "input").Exists() {
			out = setTop(out, "input", []byte("{}"))
		}
		if len(b.citations) > 0 {
			prev := gjson.GetBytes(out, "citations")
			arr := []byte{'['}
			if prev.IsArray() {
				if inner := rewrite.BlocksInner(prev); inner != "" {
					arr = append(arr, inner...)
					arr = append(arr, ',')
				}
			}
			arr = append(arr, bytes.Join(b.citations, []byte{','})...)
			out = setTop(out, "citations", append(arr, ']'))
		}
		content = append(content, out...)
	}
	content = append(content, ']')
	out := setTop(bytes.Clone(s.msg), "content", content)
	for _, m := range s.overlay {
		out = setTop(out, m.key, m.raw)
	}
	if s.usage != nil {
		out = setTop(out, "usage", s.usage)
	}
	return out, nil
}

// aspTraceBoth returns the trace with the fast path on and off.
func aspTraceBoth(s1, s2, choice []byte) (fast, slow string) {
	defer func(on bool) { anthropicFastDeltas = on }(anthropicFastDeltas)
	anthropicFastDeltas = true
	fast = aspTrace(s1, s2, choice)
	anthropicFastDeltas = false
	slow = aspTrace(s1, s2, choice)
	return fast, slow
}

// aspSeeds are the streams the differential tests start from.
func aspSeeds(t testing.TB) [][]byte {
	var streams [][]byte
	for _, n := range []string{"splice_passthrough", "splice_tools", "splice_followup1", "splice_followup2", "splice_mixed", "stream"} {
		streams = append(streams, apitest.Fixture(t, Descriptor, n+".sse"))
	}
	// The continuation tests' shapes: message_start without content, a
	// message_delta that sets content, escapes, citations, a cut tool call.
	streams = append(streams,
		[]byte(acMsgStart("msg_1", 10)+acTextBlock(0, "Hello \"you\"\n", " world")+acToolBlock(1, "t1", `{"a":1}`)+
			acMsgDelta("tool_use", `{"output_tokens":9}`)+acMsgStop),
		[]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"role\":\"assistant\"}}\n\n"+
			acTextBlock(0, "x")+acMsgDelta("end_turn", `{"output_tokens":2}`)+acMsgStop),
		[]byte(acMsgStart("msg_3", 10)+acTextBlock(0, "x")+
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"content\":[]},\"usage\":{\"output_tokens\":2}}\n\n"+acMsgStop),
		[]byte(acMsgStart("msg_2", 5)+acTextBlock(0, "cut")+acStart(1, `{"type":"tool_use","id":"t","name":"n","input":{}}`)+
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\n"+
			acMsgDelta("max_tokens", `{"output_tokens":5}`)+acMsgStop),
	)
	return streams
}

func TestAnthropicFastPathChangesNothing(t *testing.T) {
	streams := aspSeeds(t)
	choices := [][]byte{nil, {0}, {1}, {2, 2}, {4}, {5, 2}, {6, 1}}
	for i, s := range streams {
		for j, c := range choices {
			for _, s1 := range [][]byte{s, []byte(aspCRLF(string(s))), s[:len(s)/2]} {
				s2 := streams[(i+j)%len(streams)]
				fast, slow := aspTraceBoth(s1, s2, c)
				require.Equal(t, slow, fast)
				require.NotContains(t, fast, "REPLY DIFFERS")
			}
		}
	}
}

func FuzzAnthropicFastPath(f *testing.F) {
	streams := aspSeeds(f)
	for i, s := range streams {
		f.Add(s, []byte(nil), []byte{0})
		f.Add([]byte(aspCRLF(string(s))), streams[(i+1)%len(streams)], []byte{4, 1})
		f.Add(s[:len(s)/2], s, []byte{2, 1})
	}
	f.Fuzz(func(t *testing.T, s1, s2, choice []byte) {
		fast, slow := aspTraceBoth(s1, s2, choice)
		if fast != slow {
			t.Fatalf("the fast path changed the turn:\nfast:\n%s\nslow:\n%s", fast, slow)
		}
		if strings.Contains(fast, "REPLY DIFFERS") {
			t.Fatalf("Reply differs from the reference:\n%s", fast)
		}
	})
}

func TestAnthropicSpliceOutputDoesNotAliasPastTheEvent(t *testing.T) {
	// A pass-through event comes back without a copy; appending to what
	// Feed returned must not write into the caller's buffer after it.
	sp := Descriptor.NewSplicer()
	_, err := sp.Feed(&aspEvents([]byte(acMsgStart("m", 1)))[0])
	require.NoError(t, err)
	_, err = sp.Feed(&aspEvents([]byte(acStart(0, `{"type":"text","text":""}`)))[0])
	require.NoError(t, err)
	raw := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n"
	buf := []byte(raw + "NEXT EVENT")
	ev := aspEvents([]byte(raw))[0]
	ev.Raw = buf[:len(raw)] // capacity runs on into the next bytes
	out, err := sp.Feed(&ev)
	require.NoError(t, err)
	require.Equal(t, raw, string(out))
	_ = append(out, "XXXX"...)
	require.Equal(t, raw+"NEXT EVENT", string(buf))
}
