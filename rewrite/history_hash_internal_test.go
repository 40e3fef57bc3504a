package rewrite

import (
	"strings"
	"testing"
)

// FuzzIndexCacheControl: the same answer as strings.Index.
func FuzzIndexCacheControl(f *testing.F) {
	f.Add(`{"cache_control":1}`)
	f.Add(`_"cache_control"_cache_control"`)
	f.Add(`"cache_contro`)
	f.Add(`___"cache_control"`)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := indexCacheControl(s), strings.Index(s, cacheControlKey); got != want {
			t.Fatalf("indexCacheControl(%q) = %d, strings.Index %d", s, got, want)
		}
	})
}
