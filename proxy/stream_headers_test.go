package proxy_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// TestStreamsSayNoBuffering: every reply shepherd streams, on each API,
// passed through as it comes or through the turn engine (topics on), and
// Gemini's JSON-array stream too, carries "X-Accel-Buffering: no", so a
// buffering proxy in front (nginx, an ingress) forwards each event as it
// comes; a whole (non-streamed) reply does not carry it.
func TestStreamsSayNoBuffering(t *testing.T) {
	for _, engine := range []bool{false, true} {
		h := newHarness(t, harnessOptions{Config: func(c *config.Config) { c.Topics.Enabled = engine }})
		for _, d := range kit.Drivers() {
			for _, stream := range []bool{true, false} {
				name := d.Name() + map[bool]string{true: "_stream", false: "_whole"}[stream] + map[bool]string{true: "_engine", false: "_passthrough"}[engine]
				t.Run(name, func(t *testing.T) {
					h.mock.Script(mock.Reply{Text: "streamed reply"})
					a := kit.NewAgent(d, h.URL, map[string]string{"X-Session-Id": "accel-" + name})
					a.Request.Stream = stream
					a.User("hello")
					resp, body := a.Post(t)
					require.Equal(t, 200, resp.StatusCode, string(body))
					if !stream {
						require.Empty(t, resp.Header.Values("X-Accel-Buffering"), "a whole reply is not marked")
						return
					}
					require.Equal(t, []string{"no"}, resp.Header.Values("X-Accel-Buffering"))
					reply, err := d.ParseStream(body)
					require.NoError(t, err)
					require.Equal(t, "streamed reply", reply.Text)
				})
			}
		}
	}
	t.Run("gemini_array", func(t *testing.T) {
		h := newHarness(t, harnessOptions{})
		h.mock.Script(mock.Reply{Text: "array reply"})
		c := modelCases()[len(modelCases())-1]
		require.Equal(t, "gemini_array", c.name)
		resp, body := do(t, "POST", h.URL+c.path, c.body, c.headers)
		require.Equal(t, 200, resp.StatusCode, string(body))
		require.True(t, strings.HasPrefix(strings.TrimSpace(string(body)), "["), "a JSON-array stream: %s", body)
		require.Equal(t, []string{"no"}, resp.Header.Values("X-Accel-Buffering"))
	})
}
