package anthropic

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// A tool_use block without input_json_delta is observed with its start's
// input as the one fragment (what the reply view reports).
func TestObserveCallsInputInStart(t *testing.T) {
	stream := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[]}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t0\",\"name\":\"ls\",\"input\":{\"dir\":\".\"}}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"pwd\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	deltas, views, _, _ := apitest.ObserveTurn(t, Descriptor, [][]byte{[]byte(stream)}, func(b []byte) io.Reader { return bytes.NewReader(b) }, true)
	require.Len(t, views[0].ToolCalls, 2)
	var got []string
	for _, d := range deltas {
		got = append(got, d.Fragment)
	}
	require.Equal(t, []string{"", `{"dir":"."}`, "", "{}"}, got)
	require.Equal(t, string(views[0].ToolCalls[0].Args), `{"dir":"."}`)
	require.Equal(t, string(views[0].ToolCalls[1].Args), `{}`)
}

// A continuation stream (Continue) counts as the next Stream, its calls
// indexed from 0.
func TestObserveCallsContinue(t *testing.T) {
	sp := newAnthropicSplicer()
	var deltas []conv.ToolCallDelta
	sp.ObserveCalls(func(d conv.ToolCallDelta) { deltas = append(deltas, d) })
	feed := func(s string) {
		rd := rewrite.NewReader(strings.NewReader(s))
		for {
			ev, err := rd.Next()
			if len(ev.Raw) > 0 {
				_, ferr := sp.Feed(&ev)
				require.NoError(t, ferr)
			}
			if err == io.EOF {
				return
			}
			require.NoError(t, err)
		}
	}
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[]}}\n\n"
	end := func(stop string) string {
		return "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"" + stop + "\"}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	}
	feed(start + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"half\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" + end("max_tokens"))
	_, err := sp.Release(nil, nil)
	require.NoError(t, err)
	sp.Continue()
	feed(start + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\" rest\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"ls\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n" + end("tool_use"))
	require.Equal(t, []conv.ToolCallDelta{
		{Stream: 1, Index: 0, ID: "t", Name: "ls"},
		{Stream: 1, Index: 0, Fragment: "{}"},
		{Stream: 1, Index: 0, Done: true},
	}, deltas)
}
