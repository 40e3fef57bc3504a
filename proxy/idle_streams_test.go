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
// and reads through the first event.
func openIdleStream(t *testing.T, h *harness, i int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.URL, "http://"))
	require.NoError(t, err)
	body := `{"model":"claude-test","max_tokens":256,"messages":[{"role":"user","content":"Hello"}],"stream":true}`
	req, err := http.NewRequest("POST", h.URL+"/v1/messages", strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range anthropicHeaders() {
		req.Header.Set(k, v)
	}
	req.Header.Set("X-Session-Id", fmt.Sprintf("idle-%d", i))
	require.NoError(t, req.Write(c))
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	ev := readEvent(t, bufio.NewReader(resp.Body))
	require.Contains(t, ev, "message_start")
	return c
}

// An open stream costs the proxy one goroutine, the client connection's: its
// writer runs there (streamBody), not on a second goroutine fed through a
// pipe (fasthttp's SetBodyStreamWriter), with hooks off and on.
func TestIdleStreamsRunOnTheConnectionGoroutine(t *testing.T) {
	for _, hooksOn := range []bool{false, true} {
		t.Run(fmt.Sprintf("hooks=%v", hooksOn), func(t *testing.T) {
			h := newHarness(t, harnessOptions{
				Mock: mock.Options{Hold: 30 * time.Second, PingEvery: 100 * time.Millisecond},
				Config: func(c *config.Config) {
					c.Topics.Enabled = hooksOn
				},
			})
			countWriters := func() int {
				n := 0
				for _, g := range goroutineStacks() {
					if strings.Contains(g, "proxy.(*streamBody).WriteTo") {
						n++
					}
				}
				return n
			}
			before := countWriters() // streams of earlier tests still closing, if any
			const n = 6
			for i := range n {
				c := openIdleStream(t, h, i)
				defer c.Close()
			}
			writers := 0
			for _, g := range goroutineStacks() {
				require.NotContains(t, g, "fasthttp.NewStreamReader", "a stream writer runs on its own goroutine")
				if !strings.Contains(g, "proxy.(*streamBody).WriteTo") {
					continue
				}
				writers++
				require.Contains(t, g, "fasthttp.(*Server).serveConn", "the stream writer runs on the connection goroutine")
				if hooksOn {
					require.Contains(t, g, "proxy.(*Server).pipeTurn")
				} else {
					require.Contains(t, g, "proxy.(*Server).pipe(")
				}
			}
			require.Equal(t, before+n, writers, "one goroutine per open stream")
		})
	}
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
