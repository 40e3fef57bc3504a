package rewrite_test

import (
	"errors"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

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
	for _, api := range apis.All() {
		require.NotNil(t, apitest.CodecFor(api), api.Name)
		require.NotNil(t, api.Codec(), api.Name)
	}
}

func TestEmptyEditsReturnBodyItself(t *testing.T) {
	for _, api := range apis.All() {
		body := apitest.Fixture(t, api, "request.json")
		out, err := apitest.CodecFor(api).ApplyEdits(body, conv.RequestEdits{})
		require.NoError(t, err)
		require.Same(t, &body[0], &out[0])
	}
}

func TestFixtureEdits(t *testing.T) {
	for _, api := range apis.All() {
		t.Run(api.Name, func(t *testing.T) {
			c := apitest.CodecFor(api)
			body := apitest.Fixture(t, api, "request.json")
			before, err := c.ParseRequest(body)
			require.NoError(t, err)
			out := apitest.CheckEdit(t, c, body, allEdits)
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
				apitest.CheckEdit(t, c, body, e)
			}
		})
	}
}

func TestErrorStatusMaps(t *testing.T) {
	for _, s := range []int{400, 401, 402, 403, 404, 413, 429, 500, 502, 503, 504, 529, 418, 599} {
		for _, api := range apis.All() {
			b := apitest.CodecFor(api).ErrorBody(s, "m")
			require.True(t, gjson.ValidBytes(b), "%s %d", api, s)
		}
	}
	require.Equal(t, "invalid_request_error", rewrite.OpenAIErrorType(413))
	require.Equal(t, "authentication_error", rewrite.OpenAIErrorType(401))
	require.Equal(t, "server_error", rewrite.OpenAIErrorType(500))
}

func TestMalformedCommon(t *testing.T) {
	for _, api := range apis.All() {
		c := apitest.CodecFor(api)
		for _, body := range []string{``, `{`, `[]`, `"x"`, `{"a":1}x`, `nul`} {
			_, err := c.ParseRequest([]byte(body))
			require.ErrorIs(t, err, rewrite.ErrMalformed, "%s %q", api, body)
			_, err = c.ParseReply([]byte(body))
			require.ErrorIs(t, err, rewrite.ErrMalformedReply, "%s %q", api, body)
			require.False(t, errors.Is(err, rewrite.ErrMalformed))
		}
		_, err := c.NewStreamDecoder().Decode(rewrite.DataEvent([]byte(`{"type":`)))
		require.ErrorIs(t, err, rewrite.ErrMalformedReply)
	}
}
