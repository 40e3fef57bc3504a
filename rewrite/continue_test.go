package rewrite_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/apis"
)

// Every API of the table supports continuation today; an API without a
// ContinueCodec or a ContinueSplicer would not.
func TestCanContinue(t *testing.T) {
	for _, api := range apis.All() {
		require.True(t, api.CanContinue(), api.Name)
		noSplicer := *api
		noSplicer.NewSplicer = nil
		require.False(t, noSplicer.CanContinue(), api.Name)
	}
}
