package gemini

import (
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// TestObserveCalls: a Write-like call (a path, then a long content) and a
// follow-up's call, observed in every chunking, against the reply views.
func TestObserveCalls(t *testing.T) {
	apitest.CheckObserve(t, Descriptor, apitest.Observe{
		Streams: []string{"observe_write.sse", "observe_follow.sse"},
		// Gemini calls arrive whole: nothing to announce early.
	})
}
