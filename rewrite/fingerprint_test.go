package rewrite_test

import (
	"testing"

	"github.com/shepherd-proxy/shepherd/bench/workload"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// RequestFingerprint agrees with ParseRequest on every API's fixture (an
// API with its own fingerprint path checks more in its package).
func TestRequestFingerprint(t *testing.T) {
	for _, api := range apis.All() {
		apitest.CheckFingerprint(t, api, apitest.Fixture(t, api, "request.json"))
	}
}

func FuzzRequestFingerprint(f *testing.F) {
	seedRequests(f)
	f.Add(uint8(1), workload.ChatAgent(3, false), "", int64(0))
	f.Fuzz(func(t *testing.T, api uint8, body []byte, _ string, _ int64) {
		all := apis.All()
		apitest.CheckFingerprint(t, all[int(api)%len(all)], body)
	})
}
