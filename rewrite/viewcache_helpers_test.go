package rewrite

import (
	"fmt"
	"reflect"
)

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
