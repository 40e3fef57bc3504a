package rewrite

import (
	"bytes"
	"embed"
	"errors"
	"io"
	"path"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

//go:embed testdata/*/*
var fixtures embed.FS

// fixture returns testdata/<api>/<name>.
func fixture(t testing.TB, api *Descriptor, name string) []byte {
	t.Helper()
	b, err := fixtures.ReadFile(path.Join("testdata", api.Name, name))
	require.NoError(t, err)
	return b
}

// decodeSSE decodes a whole SSE stream with a fresh decoder, reading it in
// every chunking; it checks that all readings agree and returns the events
// and the accumulated reply.
func decodeSSE(t *testing.T, c Codec, stream []byte) ([]StreamEvent, *conv.Reply) {
	t.Helper()
	var first []StreamEvent
	var firstReply *conv.Reply
	for how, mk := range readers(string(stream)) {
		rd := NewReader(mk())
		dec := c.NewStreamDecoder()
		var acc StreamAccumulator
		var all []StreamEvent
		for {
			ev, err := rd.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err, how)
			evs, err := dec.Decode(ev)
			require.NoError(t, err, how)
			acc.Add(evs...)
			all = append(all, evs...)
		}
		if first == nil {
			first, firstReply = all, acc.Reply()
			continue
		}
		require.Equal(t, first, all, "decoding must not depend on chunking (%s)", how)
		require.Equal(t, firstReply, acc.Reply(), how)
	}
	return first, firstReply
}

// kinds lists the kinds of events, for compact assertions.
func kinds(evs []StreamEvent) []EventKind {
	out := make([]EventKind, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

// isSubsequence reports whether every byte of a appears in b in order: what
// an edit made only of insertions leaves behind.
func isSubsequence(a, b []byte) bool {
	i := 0
	for j := 0; i < len(a) && j < len(b); j++ {
		if a[i] == b[j] {
			i++
		}
	}
	return i == len(a)
}

// checkEdit applies e to body and checks the properties every edit has:
// valid JSON out, deterministic, body untouched, the result parses, and
// (without an output limit change) the original bytes all kept in order.
func checkEdit(t testing.TB, c Codec, body []byte, e conv.RequestEdits) []byte {
	t.Helper()
	orig := append([]byte(nil), body...)
	out, err := c.ApplyEdits(body, e)
	require.NoError(t, err)
	require.Equal(t, orig, body, "ApplyEdits must not modify its input")
	require.True(t, gjson.ValidBytes(out), "invalid JSON:\n%s", out)
	again, err := c.ApplyEdits(body, e)
	require.NoError(t, err)
	require.Equal(t, out, again, "ApplyEdits must be deterministic")
	if e.SetMaxOutputTokens == 0 {
		// A JSON null an edit fills in is the only thing that may go.
		kept := bytes.ReplaceAll(body, []byte("null"), nil)
		require.True(t, isSubsequence(kept, out), "original bytes must stay in order:\n%s", out)
	}
	_, err = c.ParseRequest(out)
	require.NoError(t, err, "edited body must parse:\n%s", out)
	return out
}

// allEdits is one edit of every kind.
var allEdits = conv.RequestEdits{
	AddTools: []conv.ToolSpec{{Name: "create_new_topic", Description: "Start a topic",
		Parameters: []byte(`{"type":"object","properties":{"title":{"type":"string"}}}`)}},
	AppendSystem:       []string{"Rules: be <careful> & \"exact\"."},
	AppendUserText:     []string{"<reminder>topic: \u2028x</reminder>"},
	SetMaxOutputTokens: 8192,
}

// TestDescriptorCodecs checks that every API's descriptor builds a codec,
// with or without a view cache (an unknown API name is an error of
// apis.Lookup, tested there).
func TestDescriptorCodecs(t *testing.T) {
	for _, api := range allAPIs {
		require.NotNil(t, codecFor(api), api.Name)
		require.NotNil(t, api.Codec(), api.Name)
	}
}

func TestEmptyEditsReturnBodyItself(t *testing.T) {
	for _, api := range []*Descriptor{Anthropic, OpenAIChat, OpenAIResponses, Gemini} {
		body := fixture(t, api, "request.json")
		out, err := codecFor(api).ApplyEdits(body, conv.RequestEdits{})
		require.NoError(t, err)
		require.Same(t, &body[0], &out[0])
	}
}

func TestFixtureEdits(t *testing.T) {
	for _, api := range []*Descriptor{Anthropic, OpenAIChat, OpenAIResponses, Gemini} {
		t.Run(api.Name, func(t *testing.T) {
			c := codecFor(api)
			body := fixture(t, api, "request.json")
			before, err := c.ParseRequest(body)
			require.NoError(t, err)
			out := checkEdit(t, c, body, allEdits)
			after, err := c.ParseRequest(out)
			require.NoError(t, err)
			require.True(t, after.HasTool("create_new_topic"))
			require.Len(t, after.Tools, len(before.Tools)+1)
			require.Contains(t, after.System, allEdits.AppendSystem[0])
			require.Equal(t, int64(8192), after.MaxOutputTokens)
			// Each edit alone keeps everything else.
			for _, e := range []conv.RequestEdits{
				{AddTools: allEdits.AddTools}, {AppendSystem: allEdits.AppendSystem},
				{AppendUserText: allEdits.AppendUserText}, {SetMaxOutputTokens: 5},
			} {
				checkEdit(t, c, body, e)
			}
		})
	}
}

func TestErrorShapes(t *testing.T) {
	msg := `bad "thing" <x>`
	tests := []struct {
		api    *Descriptor
		status int
		body   string
		event  string
	}{
		{Anthropic, 400, `{"type":"error","error":{"type":"invalid_request_error","message":"bad \"thing\" <x>"}}`,
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad \\\"thing\\\" <x>\"}}\n\n"},
		{Anthropic, 529, `{"type":"error","error":{"type":"overloaded_error","message":"bad \"thing\" <x>"}}`, ""},
		{OpenAIChat, 429, `{"error":{"message":"bad \"thing\" <x>","type":"rate_limit_error","param":null,"code":null}}`,
			"data: {\"error\":{\"message\":\"bad \\\"thing\\\" <x>\",\"type\":\"rate_limit_error\",\"param\":null,\"code\":null}}\n\n"},
		{OpenAIResponses, 502, `{"error":{"message":"bad \"thing\" <x>","type":"server_error","param":null,"code":null}}`,
			"event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"bad \\\"thing\\\" <x>\",\"param\":null}\n\n"},
		{Gemini, 503, `{"error":{"code":503,"message":"bad \"thing\" <x>","status":"UNAVAILABLE"}}`,
			"data: {\"error\":{\"code\":503,\"message\":\"bad \\\"thing\\\" <x>\",\"status\":\"UNAVAILABLE\"}}\n\n"},
	}
	for _, tt := range tests {
		c := codecFor(tt.api)
		require.JSONEq(t, tt.body, string(c.ErrorBody(tt.status, msg)))
		require.Equal(t, tt.body, string(c.ErrorBody(tt.status, msg)))
		if tt.event != "" {
			require.Equal(t, tt.event, string(c.StreamErrorEvent(tt.status, msg)))
		}
		// The stream error decodes as an Error event with the message.
		rd := NewReader(bytes.NewReader(c.StreamErrorEvent(tt.status, msg)))
		ev, err := rd.Next()
		require.NoError(t, err)
		evs, err := c.NewStreamDecoder().Decode(ev)
		require.NoError(t, err)
		require.Len(t, evs, 1)
		require.Equal(t, Error, evs[0].Kind)
		require.Equal(t, msg, evs[0].ErrorMessage)
	}
}

func TestErrorStatusMaps(t *testing.T) {
	for _, s := range []int{400, 401, 402, 403, 404, 413, 429, 500, 502, 503, 504, 529, 418, 599} {
		for _, api := range []*Descriptor{Anthropic, OpenAIChat, OpenAIResponses, Gemini} {
			b := codecFor(api).ErrorBody(s, "m")
			require.True(t, gjson.ValidBytes(b), "%s %d", api, s)
		}
	}
	require.Equal(t, "authentication_error", anthropicErrorType(401))
	require.Equal(t, "not_found_error", anthropicErrorType(404))
	require.Equal(t, "request_too_large", anthropicErrorType(413))
	require.Equal(t, "rate_limit_error", anthropicErrorType(429))
	require.Equal(t, "api_error", anthropicErrorType(500))
	require.Equal(t, "timeout_error", anthropicErrorType(504))
	require.Equal(t, "permission_error", anthropicErrorType(403))
	require.Equal(t, "invalid_request_error", openAIErrorType(413))
	require.Equal(t, "authentication_error", openAIErrorType(401))
	require.Equal(t, "server_error", openAIErrorType(500))
	require.Equal(t, "PERMISSION_DENIED", geminiStatus(403))
	require.Equal(t, "NOT_FOUND", geminiStatus(404))
	require.Equal(t, "RESOURCE_EXHAUSTED", geminiStatus(429))
	require.Equal(t, "INTERNAL", geminiStatus(500))
	require.Equal(t, "DEADLINE_EXCEEDED", geminiStatus(504))
	require.Equal(t, "UNAUTHENTICATED", geminiStatus(401))
}

func TestMalformedCommon(t *testing.T) {
	for _, api := range []*Descriptor{Anthropic, OpenAIChat, OpenAIResponses, Gemini} {
		c := codecFor(api)
		for _, body := range []string{``, `{`, `[]`, `"x"`, `{"a":1}x`, `nul`} {
			_, err := c.ParseRequest([]byte(body))
			require.ErrorIs(t, err, ErrMalformed, "%s %q", api, body)
			_, err = c.ParseReply([]byte(body))
			require.ErrorIs(t, err, ErrMalformedReply, "%s %q", api, body)
			require.False(t, errors.Is(err, ErrMalformed))
		}
		_, err := c.NewStreamDecoder().Decode(Event{Data: []byte(`{"type":`), hasData: true})
		require.ErrorIs(t, err, ErrMalformedReply)
	}
}

func TestStreamAccumulatorCopies(t *testing.T) {
	var a StreamAccumulator
	a.Add(StreamEvent{Kind: BlockStart, BlockKind: conv.BlockToolCall, Index: 3, ToolCallID: "x", ToolName: "n", ArgsDelta: "{"})
	r1 := a.Reply()
	a.Add(StreamEvent{Kind: BlockDelta, BlockKind: conv.BlockToolCall, Index: 3, ArgsDelta: "}"})
	r2 := a.Reply()
	require.Equal(t, "{", string(r1.ToolCalls[0].Args))
	require.Equal(t, "{}", string(r2.ToolCalls[0].Args))
	require.Equal(t, conv.ToolCall{Index: 0, ID: "x", Name: "n", Args: []byte("{}")}, r2.ToolCalls[0])
}

func TestEventKindString(t *testing.T) {
	require.Equal(t, "block_delta", BlockDelta.String())
	require.Equal(t, "other", Other.String())
	require.Equal(t, "unknown", EventKind(99).String())
}
