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
