package rewrite_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// textReplies are reply bodies per API with text in several parts,
// escapes and tool calls, beside the fixture.
var textReplies = map[string][]string{
	"anthropic": {
		`{"model":"m","content":[{"type":"text","text":"a\nb \u00e9"},{"type":"tool_use","id":"t1","name":"Read","input":{"p":1}},{"type":"text","text":"c"}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":4}}`,
		`{"content":[{"type":"t\u0065xt","text":"escaped type"}],"stop_reason":"end_turn"}`,
	},
	"openai_chat": {
		`{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"a\nb","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},"finish_reason":"tool_calls"}]}`,
		`{"choices":[{"index":0,"message":{"content":[{"type":"text","text":"p1"},{"type":"text","text":"p2\t"}]},"finish_reason":"stop"}]}`,
	},
	"openai_responses": {
		`{"model":"m","output":[{"type":"message","content":[{"type":"output_text","text":"x\ny"},{"type":"output_text","text":"z"}]},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}],"status":"completed"}`,
	},
	"gemini": {
		`{"modelVersion":"g","candidates":[{"content":{"parts":[{"text":"th","thought":true},{"text":"a\u0021"},{"functionCall":{"name":"f","args":{"a":1}}},{"text":"b"}]},"finishReason":"STOP"}]}`,
	},
}

// ParseReplyCalls is ParseReply without the text, for every API: the same
// view in every other field, and the same errors.
func TestParseReplyCallsIsParseReplyWithoutText(t *testing.T) {
	for _, api := range apis.All() {
		t.Run(api.Name, func(t *testing.T) {
			c := apitest.CodecFor(api)
			rc, ok := c.(rewrite.ReplyCallsParser)
			require.True(t, ok, "%s has no ParseReplyCalls", api.Name)
			bodies := append([]string{string(apitest.Fixture(t, api, "reply.json"))}, textReplies[api.Name]...)
			bodies = append(bodies, `[]`, `{`, `"x"`)
			texts := 0
			for i, body := range bodies {
				want, werr := c.ParseReply([]byte(body))
				got, gerr := rc.ParseReplyCalls([]byte(body))
				if werr != nil {
					require.Error(t, gerr, "body %d", i)
					require.Equal(t, errors.Is(werr, rewrite.ErrMalformedReply), errors.Is(gerr, rewrite.ErrMalformedReply))
					continue
				}
				require.NoError(t, gerr, "body %d", i)
				require.Empty(t, got.Text, "body %d", i)
				if want.Text != "" {
					texts++
				}
				want.Text = ""
				require.Equal(t, want, got, fmt.Sprintf("body %d", i))
			}
			require.NotZero(t, texts, "no reply with text was compared")
		})
	}
}

// The texts of the replies above, decoded and joined as the codecs did
// before parts were kept raw.
func TestParseReplyTexts(t *testing.T) {
	want := map[string][]string{
		"anthropic":        {"a\nb éc", "escaped type"},
		"openai_chat":      {"a\nb", "p1\np2\t"},
		"openai_responses": {"x\nyz"},
		"gemini":           {"a!b"},
	}
	for _, api := range apis.All() {
		c := apitest.CodecFor(api)
		for i, body := range textReplies[api.Name] {
			r, err := c.ParseReply([]byte(body))
			require.NoError(t, err)
			require.Equal(t, want[api.Name][i], r.Text, "%s body %d", api.Name, i)
		}
	}
}
