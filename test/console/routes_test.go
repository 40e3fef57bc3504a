package console_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// TestConsoleRoutes: the console is served with the admin endpoints, on
// the proxy's own listener when there is no dedicated admin listener; its
// shells need no token, its fragments do, and a token in the query string
// is not accepted.
func TestConsoleRoutes(t *testing.T) {
	s := startShepherd(t, shepherdOptions{Config: func(c *config.Config) { c.Admin.Listen = "" }})
	bearer := map[string]string{"Authorization": "Bearer " + adminToken}
	for _, base := range []string{s.URL, s.Admin} {
		resp, body := kit.Do(t, "GET", base+"/console/", "", nil)
		require.Equal(t, 200, resp.StatusCode, base)
		require.Contains(t, string(body), `id="token-form"`)
		require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'")

		resp, _ = kit.Do(t, "GET", base+"/console/static/console.js", "", nil)
		require.Equal(t, 200, resp.StatusCode)

		resp, _ = kit.Do(t, "GET", base+"/console/f/sessions", "", nil)
		require.Equal(t, 401, resp.StatusCode)
		resp, _ = kit.Do(t, "GET", base+"/console/f/sessions?token="+adminToken, "", nil)
		require.Equal(t, 401, resp.StatusCode, "the token is taken from the header only")
		resp, _ = kit.Do(t, "GET", base+"/console/f/sessions", "", bearer)
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))

		resp, _ = kit.Do(t, "POST", base+"/console/f/sessions", "{}", bearer)
		require.Equal(t, 405, resp.StatusCode)
	}
}
