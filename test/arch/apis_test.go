package arch

import (
	"slices"
	"testing"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
)

// TestKnownAPIs: hooks.KnownAPIs (what a feature's apis key may list; hooks
// may not import the codecs) names exactly the APIs of the table.
func TestKnownAPIs(t *testing.T) {
	var names []string
	for _, d := range apis.All() {
		names = append(names, d.Name)
	}
	slices.Sort(names)
	known := slices.Sorted(slices.Values(hooks.KnownAPIs))
	if !slices.Equal(names, known) {
		t.Fatalf("hooks.KnownAPIs = %v, the API table has %v", known, names)
	}
}
