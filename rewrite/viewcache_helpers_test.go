package rewrite

import (
	"fmt"
	"reflect"
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

// rebind returns c parsing through v instead (nil: no cache): the codec
// of the API c belongs to, made afresh with v.
func rebind(c Codec, v *ViewCache) Codec {
	for _, api := range allAPIs {
		if reflect.TypeOf(api.NewCodec(nil)) == reflect.TypeOf(c) {
			return api.NewCodec(v)
		}
	}
	panic(fmt.Sprintf("rebind: no API has codec type %T", c))
}
