package rewrite_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// Every API's codec classifies side requests (each API's cases are in its
// package's TestSideRequest).
func TestSideRequestEveryCodec(t *testing.T) {
	for _, api := range apis.All() {
		_, ok := apitest.CodecFor(api).(rewrite.SideClassifier)
		require.True(t, ok, "%s codec classifies side requests", api)
		require.Equal(t, rewrite.SideNoTools, rewrite.SideRequest(apitest.CodecFor(api), []byte(`not json`)))
	}
}
