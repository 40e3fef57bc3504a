package proxy_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
)

// goroutineStacks returns the stack of every goroutine of the process.
func goroutineStacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// openIdleStream sends a streaming Anthropic request on a new connection
// and reads through the first event; proto is the request's HTTP version.
func openIdleStream(t *testing.T, h *harness, i int, proto string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.URL, "http://"))
	require.NoError(t, err)
	body := `{"model":"claude-test","max_tokens":256,"messages":[{"role":"user","content":"Hello"}],"stream":true}`
	var req strings.Builder
	fmt.Fprintf(&req, "POST /v1/messages %s\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n",
		proto, strings.TrimPrefix(h.URL, "http://"), len(body))
	for k, v := range anthropicHeaders() {
		fmt.Fprintf(&req, "%s: %s\r\n", k, v)
	}
	fmt.Fprintf(&req, "X-Session-Id: idle-%d\r\n\r\n%s", i, body)
	_, err = c.Write([]byte(req.String()))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	ev := readEvent(t, bufio.NewReader(resp.Body))
	require.Contains(t, ev, "message_start")
	return c
}

// countStacks counts the goroutines whose stack holds every one of parts.
func countStacks(parts ...string) int {
	n := 0
	for _, g := range goroutineStacks() {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(g, p)
		}
		if all {
			n++
		}
	}
	return n
}

// An open HTTP/1.1 stream costs the proxy one goroutine, its own (a
// detached stream): not fasthttp's connection goroutine, which goes back to
// serve other connections, and not a second goroutine fed through a pipe
// (fasthttp's SetBodyStreamWriter), with hooks off and on. An HTTP/1.0
// stream stays on the connection goroutine (streamBody.WriteTo).
func TestIdleStreamsRunDetached(t *testing.T) {
	for _, hooksOn := range []bool{false, true} {
		t.Run(fmt.Sprintf("hooks=%v", hooksOn), func(t *testing.T) {
			h := newHarness(t, harnessOptions{
				Mock: mock.Options{Hold: 30 * time.Second, PingEvery: 100 * time.Millisecond},
				Config: func(c *config.Config) {
					c.Topics.Enabled = hooksOn
				},
			})
			writer := "proxy.(*Server).pipe("
			if hooksOn {
				writer = "proxy.(*Server).pipeTurn"
			}
			// Streams of earlier tests may still be closing.
			before, beforeOld := countStacks("proxy.(*detachedStream).run", writer), countStacks("proxy.(*streamBody).WriteTo")
			const n = 6
			for i := range n {
				c := openIdleStream(t, h, i, "HTTP/1.1")
				defer c.Close()
			}
			require.Equal(t, before+n, countStacks("proxy.(*detachedStream).run", writer), "one detached goroutine per open stream")
			// (A detached stream's goroutine serves its connection with
			// fasthttp once the stream is over: earlier tests' may.)
			require.Zero(t, countStacks("proxy.(*detachedStream).run", writer, "fasthttp.(*Server).serveConn"), "a detached stream is off fasthttp's connection goroutine")
			require.Equal(t, beforeOld, countStacks("proxy.(*streamBody).WriteTo"), "no stream on a connection goroutine")
			require.Zero(t, countStacks("fasthttp.NewStreamReader"), "a stream writer runs on its own goroutine")

			c := openIdleStream(t, h, n, "HTTP/1.0")
			defer c.Close()
			require.Equal(t, beforeOld+1, countStacks("proxy.(*streamBody).WriteTo", "fasthttp.(*Server).serveConn", writer),
				"an HTTP/1.0 stream runs on the connection goroutine")
		})
	}
	t.Run("detach_streams=false", func(t *testing.T) {
		h := newHarness(t, harnessOptions{
			Mock:   mock.Options{Hold: 30 * time.Second, PingEvery: 100 * time.Millisecond},
			Config: func(c *config.Config) { c.Limits.DetachStreams = false },
		})
		before := countStacks("proxy.(*streamBody).WriteTo", "fasthttp.(*Server).serveConn")
		c := openIdleStream(t, h, 0, "HTTP/1.1")
		defer c.Close()
		require.Equal(t, before+1, countStacks("proxy.(*streamBody).WriteTo", "fasthttp.(*Server).serveConn"),
			"with limits.detach_streams off, an HTTP/1.1 stream runs on the connection goroutine")
	})
}

// With hooks, the request side runs on a goroutine of its own (offStack),
// so its deep stack does not stay with the connection goroutine that a
// stream then parks on; without hooks it runs on the connection goroutine.
func TestHandlerRunsOffStackOnlyWithHooks(t *testing.T) {
	for _, hooksOn := range []bool{false, true} {
		t.Run(fmt.Sprintf("hooks=%v", hooksOn), func(t *testing.T) {
			h := newHarness(t, harnessOptions{
				Mock: mock.Options{HeaderDelay: 2 * time.Second},
				Config: func(c *config.Config) {
					c.Topics.Enabled = hooksOn
				},
			})
			done := make(chan struct{})
			go func() {
				defer close(done)
				resp, _ := do(t, "POST", h.URL+"/v1/messages",
					`{"model":"claude-test","max_tokens":256,"messages":[{"role":"user","content":"Hello"}]}`, anthropicHeaders())
				require.Equal(t, 200, resp.StatusCode)
			}()
			// The handler waits for the upstream's headers: catch it there.
			var handler string
			deadline := time.Now().Add(5 * time.Second)
			for handler == "" && time.Now().Before(deadline) {
				for _, g := range goroutineStacks() {
					if strings.Contains(g, "proxy.(*Server).handle(") && strings.Contains(g, "DoTimeout") {
						handler = g
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
			require.NotEmpty(t, handler, "the handler was never seen waiting for the upstream")
			if hooksOn {
				require.NotContains(t, handler, "fasthttp.(*Server).serveConn")
				require.Contains(t, handler, "proxy.(*offStackPool).work")
			} else {
				require.Contains(t, handler, "fasthttp.(*Server).serveConn")
				require.NotContains(t, handler, "offStackPool")
			}
			<-done
		})
	}
}
