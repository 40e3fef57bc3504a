package proxy_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// rawUpstream is an upstream that watches request bodies arrive: it counts
// each body's bytes as they are read off the socket (arrived), and answers
// a request with reply only once its whole body is in. bodies records each
// request's body and whether it came whole.
type rawUpstream struct {
	ln    net.Listener
	reply string

	mu      sync.Mutex
	arrived int // body bytes of the request being read
	bodies  []upstreamBody
	changed chan struct{} // signalled (non-blocking) on every change
}

type upstreamBody struct {
	body  []byte
	whole bool
}

func startRawUpstream(t *testing.T, reply string) *rawUpstream {
	t.Helper()
	u := &rawUpstream{reply: reply, changed: make(chan struct{}, 1)}
	var conns sync.Map
	t.Cleanup(func() { conns.Range(func(c, _ any) bool { _ = c.(net.Conn).Close(); return true }) })
	u.ln = kit.ServeConns(t, func(c net.Conn) { conns.Store(c, nil); u.serve(c) })
	return u
}

func (u *rawUpstream) url() string { return "http://" + u.ln.Addr().String() }

func (u *rawUpstream) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		var body []byte
		buf := make([]byte, 4096)
		for int64(len(body)) < req.ContentLength {
			n, err := req.Body.Read(buf)
			body = append(body, buf[:n]...)
			u.note(func() { u.arrived = len(body) })
			if err != nil {
				break
			}
		}
		whole := int64(len(body)) == req.ContentLength
		u.note(func() { u.bodies = append(u.bodies, upstreamBody{body: body, whole: whole}); u.arrived = 0 })
		if !whole {
			return
		}
		if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(u.reply), u.reply); err != nil {
			return
		}
	}
}

func (u *rawUpstream) note(f func()) {
	u.mu.Lock()
	f()
	u.mu.Unlock()
	select {
	case u.changed <- struct{}{}:
	default:
	}
}

// waitFor waits until cond (called under the lock) holds; false after d.
func (u *rawUpstream) waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.After(d)
	for {
		u.mu.Lock()
		ok := cond()
		u.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-u.changed:
		case <-deadline:
			return false
		}
	}
}

func (u *rawUpstream) received() []upstreamBody {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]upstreamBody(nil), u.bodies...)
}

// bigRequest is a generate request of d of about n bytes: a long user
// message, a reply and the next user message (a conversation past its
// opening, so that it has a session with the features off).
func bigRequest(d kit.Driver, n int) []byte {
	text := strings.Repeat("the quick brown fox jumps over the lazy dog ", n/44+1)
	history := append([]string{d.User(text)}, d.Echo([]byte(d.MinimalReply()))...)
	return []byte(d.Request(kit.Request{History: append(history, d.User("go on"))}))
}

// cutThroughHarness is shepherd with every feature off (so a long body is
// forwarded cut-through) in front of a raw upstream answering d's minimal
// reply.
func cutThroughHarness(t *testing.T, d kit.Driver, cfg func(*config.Config)) (*harness, *rawUpstream) {
	u := startRawUpstream(t, d.MinimalReply())
	h := newHarness(t, harnessOptions{Config: func(c *config.Config) {
		c.Upstreams.Anthropic, c.Upstreams.OpenAI, c.Upstreams.Gemini = u.url(), u.url(), u.url()
		if cfg != nil {
			cfg(c)
		}
	}})
	return h, u
}

// dialShepherd opens a client connection to h with a 10 s deadline.
func dialShepherd(t *testing.T, h *harness) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.URL, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// sendHead writes a request head of d for a body of n bytes, and the
// body's first part.
func sendHead(t *testing.T, c net.Conn, d kit.Driver, n int, first []byte) {
	t.Helper()
	var head strings.Builder
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: shepherd\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", d.Path("", false), n)
	for k, v := range d.Headers() {
		fmt.Fprintf(&head, "%s: %s\r\n", k, v)
	}
	head.WriteString("\r\n")
	_, err := io.WriteString(c, head.String())
	require.NoError(t, err)
	_, err = c.Write(first)
	require.NoError(t, err)
}

// TestCutThroughForwardsWhileTheBodyArrives: with the features off, a long
// body reaches the upstream before the client has sent all of it (the
// client waits for that before it sends the rest), arrives there byte for
// byte, and the reply comes back with the request's session. Every API.
func TestCutThroughForwardsWhileTheBodyArrives(t *testing.T) {
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			h, u := cutThroughHarness(t, d, nil)
			body := bigRequest(d, 300<<10)
			c := dialShepherd(t, h)
			half := len(body) / 2
			sendHead(t, c, d, len(body), body[:half])
			require.True(t, u.waitFor(5*time.Second, func() bool { return u.arrived >= 64<<10 }),
				"the upstream got nothing while half the body was sent: shepherd held it")
			_, err := c.Write(body[half:])
			require.NoError(t, err)

			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			require.NoError(t, err)
			got, _ := io.ReadAll(resp.Body)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
			require.Equal(t, d.MinimalReply(), string(got))
			require.NotEmpty(t, resp.Header.Get("X-Shepherd-Session"), "the session is identified once the body is in")

			bodies := u.received()
			require.Len(t, bodies, 1)
			require.True(t, bodies[0].whole)
			require.True(t, bytes.Equal(body, bodies[0].body), "the upstream got other bytes")
			m := kit.Metrics(t, h.URL+"/metrics")
			require.Equal(t, 1.0, m.Value("shepherd_cut_through_requests_total", `route="`+d.Route(false)+`"`, `result="forwarded"`))
		})
	}
}

// TestCutThroughRefusedBodyNeverReachesTheUpstreamWhole: a long body that
// fails the checks every request gets (a repeated top-level key, broken
// JSON: both at its very end) is refused in the API's error shape, and the
// upstream, which got all of it but its last byte, sees its connection
// closed instead of a request.
func TestCutThroughRefusedBodyNeverReachesTheUpstreamWhole(t *testing.T) {
	for _, d := range kit.Drivers() {
		for name, spoil := range map[string]func([]byte) []byte{
			"repeated_key": func(b []byte) []byte { return append(b[:len(b)-1:len(b)-1], `,"zz":1,"zz":2}`...) },
			"broken_json":  func(b []byte) []byte { return append(b[:len(b)-1:len(b)-1], `]`...) },
		} {
			t.Run(d.Name()+"/"+name, func(t *testing.T) {
				h, u := cutThroughHarness(t, d, nil)
				body := spoil(bigRequest(d, 200<<10))
				c := dialShepherd(t, h)
				sendHead(t, c, d, len(body), body)
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				require.NoError(t, err)
				got, _ := io.ReadAll(resp.Body)
				require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", got)
				requireAPIErrorShape(t, d, resp.StatusCode, got)

				require.True(t, u.waitFor(5*time.Second, func() bool { return len(u.bodies) == 1 }), "the upstream connection stayed open")
				bodies := u.received()
				require.False(t, bodies[0].whole, "the upstream got the whole refused body")
				require.Equal(t, len(body)-1, len(bodies[0].body), "all but the last byte went ahead")
				m := kit.Metrics(t, h.URL+"/metrics")
				require.Equal(t, 1.0, m.Value("shepherd_cut_through_requests_total", `route="`+d.Route(false)+`"`, `result="refused"`))
			})
		}
	}
}

// TestCutThroughClientStops: a client that stops sending mid-body gets the
// body timeout's 408 in the API's shape, and one that hangs up is dropped;
// either way the upstream sees its connection closed, not a request.
func TestCutThroughClientStops(t *testing.T) {
	d := kit.Drivers()[0]
	t.Run("stalls", func(t *testing.T) {
		h, u := cutThroughHarness(t, d, func(c *config.Config) { c.Limits.BodyTimeout = 300 * time.Millisecond })
		body := bigRequest(d, 200<<10)
		c := dialShepherd(t, h)
		sendHead(t, c, d, len(body), body[:len(body)/2])
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		got, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%s", got)
		requireAPIErrorShape(t, d, resp.StatusCode, got)
		require.True(t, resp.Close, "the connection is closed: the rest of the body is unread")
		require.True(t, u.waitFor(5*time.Second, func() bool { return len(u.bodies) == 1 }))
		require.False(t, u.received()[0].whole)
		require.Equal(t, 1.0, kit.Metrics(t, h.URL+"/metrics").Value("shepherd_cut_through_requests_total",
			`route="`+d.Route(false)+`"`, `result="incomplete"`))
	})
	t.Run("hangs_up", func(t *testing.T) {
		h, u := cutThroughHarness(t, d, nil)
		body := bigRequest(d, 200<<10)
		c := dialShepherd(t, h)
		sendHead(t, c, d, len(body), body[:len(body)/2])
		require.True(t, u.waitFor(5*time.Second, func() bool { return u.arrived > 0 }))
		require.NoError(t, c.Close())
		require.True(t, u.waitFor(5*time.Second, func() bool { return len(u.bodies) == 1 }), "the upstream connection stayed open")
		require.False(t, u.received()[0].whole)
		require.Eventually(t, func() bool {
			return kit.Metrics(t, h.URL+"/metrics").Value("shepherd_cut_through_requests_total",
				`route="`+d.Route(false)+`"`, `result="incomplete"`) == 1
		}, 5*time.Second, 10*time.Millisecond)
	})
}

// TestCutThroughKeepAlive: cut-through and buffered requests follow each
// other on one client connection, each answered and forwarded whole.
func TestCutThroughKeepAlive(t *testing.T) {
	d := kit.Drivers()[0]
	h, u := cutThroughHarness(t, d, nil)
	c := dialShepherd(t, h)
	br := bufio.NewReader(c)
	sent := [][]byte{bigRequest(d, 100<<10), bigRequest(d, 100), bigRequest(d, 150<<10), bigRequest(d, 200)}
	for i, body := range sent {
		sendHead(t, c, d, len(body), body)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err, "request %d", i)
		got, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "request %d: %s", i, got)
		require.False(t, resp.Close, "request %d", i)
	}
	bodies := u.received()
	require.Len(t, bodies, len(sent))
	for i := range sent {
		require.True(t, bytes.Equal(sent[i], bodies[i].body), "request %d", i)
	}
	require.Equal(t, 2.0, kit.Metrics(t, h.URL+"/metrics").Value("shepherd_cut_through_requests_total",
		`route="`+d.Route(false)+`"`, `result="forwarded"`))
}

// TestCutThroughOnlyWhenTheBodyGoesUnchanged: with a feature on (topics
// edit the request), cut-through off, or an upstream timeout shorter than
// the body timeout, the upstream gets nothing until the body is whole.
func TestCutThroughOnlyWhenTheBodyGoesUnchanged(t *testing.T) {
	d := kit.Drivers()[0]
	for name, cfg := range map[string]func(*config.Config){
		"topics_on": func(c *config.Config) { c.Topics.Enabled = true },
		"off":       func(c *config.Config) { c.Limits.CutThroughBytes = 0 },
		// The upload would run against the upstream's write deadline.
		"upstream_timeout_below_body_timeout": func(c *config.Config) { c.Limits.UpstreamTimeout = time.Second },
	} {
		t.Run(name, func(t *testing.T) {
			h, u := cutThroughHarness(t, d, cfg)
			body := bigRequest(d, 200<<10)
			c := dialShepherd(t, h)
			sendHead(t, c, d, len(body)-1, body[:len(body)/2])
			require.False(t, u.waitFor(300*time.Millisecond, func() bool { return u.arrived > 0 }),
				"the upstream got body bytes before the body was whole")
			_, err := c.Write(body[len(body)/2 : len(body)-1])
			require.NoError(t, err)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			require.NoError(t, err)
			_, _ = io.ReadAll(resp.Body)
			// The body lacks its closing brace: refused before it went anywhere.
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			require.Empty(t, u.received())
		})
	}
}

// TestCutThroughPassThroughRoutes: a long body on a pass-through route (a
// file upload) goes upstream while it arrives whatever the features, and
// arrives as sent.
func TestCutThroughPassThroughRoutes(t *testing.T) {
	u := startRawUpstream(t, `{"id":"file_1"}`)
	h := newHarness(t, harnessOptions{Config: func(c *config.Config) {
		c.Upstreams.Anthropic = u.url()
		c.Topics.Enabled = true
	}})
	body := bytes.Repeat([]byte("--b\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nxxxxxxxx\r\n"), 4000)
	c := dialShepherd(t, h)
	head := fmt.Sprintf("POST /v1/files HTTP/1.1\r\nHost: shepherd\r\nAnthropic-Version: 2023-06-01\r\n"+
		"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: %d\r\n\r\n", len(body))
	_, err := io.WriteString(c, head)
	require.NoError(t, err)
	_, err = c.Write(body[:len(body)/2])
	require.NoError(t, err)
	require.True(t, u.waitFor(5*time.Second, func() bool { return u.arrived >= 64<<10 }),
		"the upstream got nothing while half the upload was sent: shepherd held it")
	_, err = c.Write(body[len(body)/2:])
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	got, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
	require.JSONEq(t, `{"id":"file_1"}`, string(got))
	bodies := u.received()
	require.Len(t, bodies, 1)
	require.True(t, bytes.Equal(body, bodies[0].body), "the upstream got other bytes")
	require.Equal(t, 1.0, kit.Metrics(t, h.URL+"/metrics").Value("shepherd_cut_through_requests_total",
		`route="passthrough"`, `result="forwarded"`))
}

// TestCutThroughNotForEncodedBodies: a long body sent with a
// Content-Encoding is decoded before it goes upstream, never cut through,
// whichever of its Content-Encoding header lines names the coding (here the
// second, after an empty one): the upstream gets the decoded body.
func TestCutThroughNotForEncodedBodies(t *testing.T) {
	d := kit.Drivers()[0]
	h, u := cutThroughHarness(t, d, nil)
	body := bigRequest(d, 200<<10)
	var gz bytes.Buffer
	w, err := gzip.NewWriterLevel(&gz, gzip.NoCompression) // stored: as long as the body, past cut_through_bytes
	require.NoError(t, err)
	_, _ = w.Write(body)
	require.NoError(t, w.Close())

	c := dialShepherd(t, h)
	var head strings.Builder
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: shepherd\r\nContent-Type: application/json\r\nContent-Encoding:\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n", d.Path("", false), gz.Len())
	for k, v := range d.Headers() {
		fmt.Fprintf(&head, "%s: %s\r\n", k, v)
	}
	head.WriteString("\r\n")
	_, err = io.WriteString(c, head.String()+gz.String())
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	got, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", got)
	bodies := u.received()
	require.Len(t, bodies, 1)
	require.True(t, bytes.Equal(body, bodies[0].body), "the upstream got other bytes than the decoded body")
	m := kit.Metrics(t, h.URL+"/metrics")
	require.Zero(t, m.Value("shepherd_cut_through_requests_total", `route="`+d.Route(false)+`"`, `result="forwarded"`))
}
