package proxy_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// The Go runtime profiles (heap, goroutines: what the idle-stream memory is
// measured with) are served on the dedicated admin listener only, behind
// the admin token when one is set; on the proxy listener those paths are
// proxied like any other.
func TestPprofOnAdminListenerOnly(t *testing.T) {
	for _, token := range []string{"", "s3cret"} {
		t.Run("token="+token, func(t *testing.T) {
			h := newHarness(t, harnessOptions{Config: func(c *config.Config) {
				c.Admin.Listen = "127.0.0.1:0"
				c.Admin.Token = token
			}})
			aln := kit.Listen(t)
			go func() { _ = h.srv.ServeAdmin(aln) }()
			admin := "http://" + aln.Addr().String()

			var auth map[string]string
			if token != "" {
				resp, _ := do(t, "GET", admin+"/debug/pprof/", "", nil)
				require.Equal(t, 401, resp.StatusCode)
				auth = map[string]string{"Authorization": "Bearer " + token}
			}
			resp, body := do(t, "GET", admin+"/debug/pprof/", "", auth)
			require.Equal(t, 200, resp.StatusCode)
			require.Contains(t, string(body), "goroutine")
			resp, body = do(t, "GET", admin+"/debug/pprof/heap?debug=1", "", auth)
			require.Equal(t, 200, resp.StatusCode)
			require.Contains(t, string(body), "heap profile")
			resp, body = do(t, "GET", admin+"/debug/pprof/goroutine?debug=1", "", auth)
			require.Equal(t, 200, resp.StatusCode)
			require.Contains(t, string(body), "goroutine profile")
			resp, _ = do(t, "GET", admin+"/healthz", "", nil)
			require.Equal(t, 200, resp.StatusCode, "the other admin endpoints are unchanged")

			_, body = do(t, "GET", h.URL+"/debug/pprof/", "", auth)
			require.NotContains(t, string(body), "goroutine", "the proxy listener does not serve profiles")
		})
	}
}

func TestPprofNotOnSharedListener(t *testing.T) {
	h := newHarness(t, harnessOptions{}) // admin.listen "": admin paths on the proxy listener
	resp, _ := do(t, "GET", h.URL+"/healthz", "", nil)
	require.Equal(t, 200, resp.StatusCode)
	_, body := do(t, "GET", h.URL+"/debug/pprof/", "", nil)
	require.NotContains(t, string(body), "goroutine")
	_, body = do(t, "GET", h.URL+"/debug/pprof/heap?debug=1", "", nil)
	require.NotContains(t, string(body), "heap profile")
}
