package rewrite_test

import (
	"fmt"
	"strings"
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

// PeekRequestWith reads a body large enough for the index memo from the
// index, resumed from the memo on a second look: the same hints and the
// same errors as the whole walk, on every fixture and on malformed bodies.
func TestPeekRequestWithMemoAgrees(t *testing.T) {
	views := rewrite.NewViewCache(64 << 20)
	pad := `{"x_pad":"` + strings.Repeat("p", 80<<10) + `",`
	for _, api := range apis.All() {
		fixture := apitest.Fixture(t, api, "request.json")
		bodies := []string{
			pad + strings.TrimPrefix(strings.TrimSpace(string(fixture)), "{"),
			pad + `"stream":true,"metadata":{"user_id":"u_1"},"prompt_cache_key":"k","messages":[{"role":"user","content":"x"}]}`,
			pad + `"stream":true,"metadata":{"user_id":"u_1"},"prompt_cache_key":"k","messages":[{"role":"user","content":"x"},{"role":"user","content":"y"}]}`,
			pad + `"stream":"yes"}`,
			pad + `"metadata":{"user_id":7}}`,
			pad + `"prompt_cache_key":{"a":1}}`,
			pad + `"model":`,
			pad + `"k\u0065y":1,"stream":false}`,
		}
		for round := range 2 {
			for i, body := range bodies {
				want, werr := rewrite.PeekRequest(api, []byte(body))
				got, gerr := rewrite.PeekRequestWith(views, api, []byte(body))
				require.Equal(t, want, got, "%s body %d round %d", api.Name, i, round)
				require.Equal(t, fmt.Sprint(werr), fmt.Sprint(gerr), "%s body %d round %d", api.Name, i, round)
			}
		}
	}
}
