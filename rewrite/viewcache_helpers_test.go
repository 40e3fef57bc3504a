package rewrite

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// stripDigests checks that every message's Digest (when the view cache set
// one) is the digest of the message as parsed, and returns the messages
// without it, for comparison with literal expected views.
func stripDigests(t *testing.T, msgs []conv.Message) []conv.Message {
	t.Helper()
	out := make([]conv.Message, len(msgs))
	for i, m := range msgs {
		m.Digest = nil
		if msgs[i].Digest != nil {
			require.Equal(t, conv.MessageDigest(&m), msgs[i].Digest, "digest of message %d", i)
		}
		out[i] = m
	}
	return out
}

// testViews is the view cache the tests' codecs parse through (tests that
// study the cache replace it).
var testViews = NewViewCache(DefaultViewCacheBytes)

// codecFor returns api's codec parsing through testViews.
func codecFor(api *Descriptor) Codec { return api.NewCodec(testViews) }

// viewBinder is a codec that can be rebound to another view cache.
type viewBinder interface{ withViews(*ViewCache) Codec }

func (c anthropicCodec) withViews(v *ViewCache) Codec { c.views = v; return c }
func (c chatCodec) withViews(v *ViewCache) Codec      { c.views = v; return c }
func (c responsesCodec) withViews(v *ViewCache) Codec { c.views = v; return c }
func (c geminiCodec) withViews(v *ViewCache) Codec    { c.views = v; return c }

// rebind returns c parsing through v instead (nil: no cache).
func rebind(c Codec, v *ViewCache) Codec { return c.(viewBinder).withViews(v) }
