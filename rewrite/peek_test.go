package rewrite_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// The hints agree with the full view on every fixture. (Each API's own
// checks of PeekRequest are in its package.)
func TestPeekRequestAgreesWithParseRequest(t *testing.T) {
	for _, api := range apis.All() {
		body := apitest.Fixture(t, api, "request.json")
		view, err := apitest.CodecFor(api).ParseRequest(body)
		require.NoError(t, err)
		h, err := rewrite.PeekRequest(api, body)
		require.NoError(t, err)
		require.Equal(t, view.Stream, h.Stream, api)
		require.Equal(t, view.MetadataUserID, h.MetadataUserID, api)
		require.Equal(t, view.PromptCacheKey, h.PromptCacheKey, api)
	}
}
