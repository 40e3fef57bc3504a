package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// silentUpstream is a raw TCP upstream that reads one request per
// connection and then never finishes its answer: with head it sends the
// response headers and one chunk, without it nothing. It reports each
// request it read and, for each connection, when shepherd closed it.
type silentUpstream struct {
	ln     net.Listener
	head   string // response head and first chunk; "" answers nothing
	got    chan struct{}
	closed chan time.Time
}

func newSilentUpstream(t *testing.T, head string) *silentUpstream {
	t.Helper()
	u := &silentUpstream{head: head, got: make(chan struct{}, 8), closed: make(chan time.Time, 8)}
	u.ln = kit.ServeConns(t, u.serve)
	return u
}

func (u *silentUpstream) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, req.Body)
	if u.head != "" {
		_, _ = io.WriteString(c, u.head)
	}
	u.got <- struct{}{}
	_, _ = io.Copy(io.Discard, br) // silent until shepherd hangs up
	u.closed <- time.Now()
}

func (u *silentUpstream) URL() string { return "http://" + u.ln.Addr().String() }

// TestClientDisconnectCancelsSilentUpstream: a client that closes its
// connection while shepherd waits on a silent upstream (for the response
// headers, for a streamed reply's next event) has its upstream request
// cancelled within about 100 ms, streaming or not: the upstream sees its
// connection closed, shepherd_client_disconnects_total counts it by route
// and phase, and no goroutine of the request is left.
func TestClientDisconnectCancelsSilentUpstream(t *testing.T) {
	anth := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]%s}`
	gem := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	sseHead := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		chunk("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n")
	arrayHead := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
		chunk("[{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}],\"role\":\"model\"}}]}")
	geminiSSEHead := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		chunk("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}],\"role\":\"model\"}}]}\r\n\r\n")
	for _, tc := range []struct {
		name, path, body, head string
		headers                map[string]string
		route, phase           string
		hooks                  bool
	}{
		{"anthropic/json/waiting", "/v1/messages", fmt.Sprintf(anth, ""), "", anthropicHeaders(), "messages", "waiting_upstream", false},
		{"anthropic/stream/waiting", "/v1/messages", fmt.Sprintf(anth, `,"stream":true`), "", anthropicHeaders(), "messages", "waiting_upstream", false},
		{"anthropic/stream/streaming", "/v1/messages", fmt.Sprintf(anth, `,"stream":true`), sseHead, anthropicHeaders(), "messages", "streaming", false},
		{"anthropic/json/waiting/hooks", "/v1/messages", fmt.Sprintf(anth, ""), "", anthropicHeaders(), "messages", "waiting_upstream", true},
		{"anthropic/stream/streaming/hooks", "/v1/messages", fmt.Sprintf(anth, `,"stream":true`), sseHead, anthropicHeaders(), "messages", "streaming", true},
		{"gemini/json/waiting", "/v1beta/models/g:generateContent", gem, "", geminiHeaders(), "generate_content", "waiting_upstream", false},
		{"gemini/stream/waiting", "/v1beta/models/g:streamGenerateContent", gem, "", geminiHeaders(), "stream_generate_content", "waiting_upstream", false},
		{"gemini/stream/streaming", "/v1beta/models/g:streamGenerateContent", gem, arrayHead, geminiHeaders(), "stream_generate_content", "streaming", false},
		{"gemini/sse/streaming", "/v1beta/models/g:streamGenerateContent?alt=sse", gem, geminiSSEHead, geminiHeaders(), "stream_generate_content", "streaming", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newSilentUpstream(t, tc.head)
			h := newHarness(t, harnessOptions{Config: pointAt(u.URL(), func(c *config.Config) {
				if tc.hooks {
					c.Topics.Enabled = true
				}
			})})

			c, err := net.Dial("tcp", strings.TrimPrefix(h.URL, "http://"))
			require.NoError(t, err)
			var req strings.Builder
			fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: shepherd\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", tc.path, len(tc.body))
			for k, v := range tc.headers {
				fmt.Fprintf(&req, "%s: %s\r\n", k, v)
			}
			req.WriteString("\r\n" + tc.body)
			_, err = io.WriteString(c, req.String())
			require.NoError(t, err)

			select {
			case <-u.got:
			case <-time.After(5 * time.Second):
				t.Fatal("the request never reached the upstream")
			}
			if tc.head != "" {
				// The client has the first bytes of the stream.
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 4096)
				n, err := c.Read(buf)
				require.NoError(t, err)
				require.Contains(t, string(buf[:n]), "200 OK")
			} else {
				time.Sleep(50 * time.Millisecond) // shepherd is waiting for the headers
			}
			left := time.Now()
			require.NoError(t, c.Close())

			select {
			case at := <-u.closed:
				took := at.Sub(left)
				t.Logf("upstream connection closed %v after the client left", took)
				// 100 ms, plus slack for a loaded machine and the race
				// detector.
				require.Less(t, took, 600*time.Millisecond)
			case <-time.After(5 * time.Second):
				t.Fatal("the upstream request was not cancelled after the client left")
			}

			want := fmt.Sprintf(`phase=%q,route=%q`, tc.phase, tc.route)
			require.Eventually(t, func() bool {
				m := kit.Metrics(t, h.URL+"/metrics")
				return m.Value("shepherd_client_disconnects_total", want) == 1 &&
					m.Has("shepherd_streams_open") && m.Value("shepherd_streams_open") == 0
			}, 3*time.Second, 20*time.Millisecond, "metrics: want shepherd_client_disconnects_total{%s} 1 and no open stream", want)
			requireNoRequestGoroutines(t)
		})
	}
}

// requestFrames are the functions a goroutine serving a proxied request
// runs in; none may be left once the request is over.
var requestFrames = regexp.MustCompile(`shepherd/proxy\.\(\*Server\)\.(handle|pipe|pipeTurn|spliceStream|sendFollowUp)\b|shepherd/proxy\.copyChunks|shepherd/proxy\.forwardEvents`)

// requireNoRequestGoroutines waits for every goroutine of a proxied request
// to end.
func requireNoRequestGoroutines(t *testing.T) {
	t.Helper()
	var stacks string
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		if !requestFrames.MatchString(stacks) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("goroutines of the request are left:\n%s", leftGoroutines(stacks))
}

func leftGoroutines(stacks string) string {
	var out []string
	for _, g := range strings.Split(stacks, "\n\n") {
		if requestFrames.MatchString(g) {
			out = append(out, g)
		}
	}
	return strconv.Itoa(len(out)) + " goroutines:\n" + strings.Join(out, "\n\n")
}

// firstAnsweredUpstream is a raw TCP upstream that answers the first
// request it reads (a complete Anthropic JSON reply, the connection kept
// alive) and never answers a later one, on any connection. It reports each
// unanswered request it read and, for each connection that had one, when
// shepherd closed it.
type firstAnsweredUpstream struct {
	ln       net.Listener
	mu       sync.Mutex
	answered bool
	got      chan struct{}
	closed   chan time.Time
	// firstSSE: the first request is answered with a whole SSE stream
	// (set before the first request).
	firstSSE bool
}

// anthropicSSEReply is a whole Messages stream.
const anthropicSSEReply = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

const anthropicReply = `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`

func newFirstAnsweredUpstream(t *testing.T) *firstAnsweredUpstream {
	t.Helper()
	u := &firstAnsweredUpstream{got: make(chan struct{}, 8), closed: make(chan time.Time, 8)}
	u.ln = kit.ServeConns(t, u.serve)
	return u
}

func (u *firstAnsweredUpstream) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		u.mu.Lock()
		first := !u.answered
		u.answered = true
		sse := u.firstSSE
		u.mu.Unlock()
		if first && sse {
			_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(anthropicSSEReply), anthropicSSEReply)
			continue
		}
		if first {
			_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(anthropicReply), anthropicReply)
			continue
		}
		u.got <- struct{}{}
		_, _ = io.Copy(io.Discard, br) // silent until shepherd hangs up
		u.closed <- time.Now()
		return
	}
}

func (u *firstAnsweredUpstream) URL() string { return "http://" + u.ln.Addr().String() }

// keepAliveClient is one raw client connection to shepherd that sends
// Anthropic requests on it.
type keepAliveClient struct {
	c  net.Conn
	br *bufio.Reader
}

func dialKeepAlive(t *testing.T, url string) *keepAliveClient {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return &keepAliveClient{c: c, br: bufio.NewReader(c)}
}

func (k *keepAliveClient) send(t *testing.T) {
	t.Helper()
	k.sendBody(t, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
}

func (k *keepAliveClient) sendBody(t *testing.T, body string) {
	t.Helper()
	var req strings.Builder
	fmt.Fprintf(&req, "POST /v1/messages HTTP/1.1\r\nHost: shepherd\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	for k, v := range anthropicHeaders() {
		fmt.Fprintf(&req, "%s: %s\r\n", k, v)
	}
	req.WriteString("\r\n" + body)
	_, err := io.WriteString(k.c, req.String())
	require.NoError(t, err)
}

// answered reads a complete 200 reply that keeps the connection open.
func (k *keepAliveClient) answered(t *testing.T) {
	t.Helper()
	_ = k.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(k.br, nil)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode, string(b))
	require.False(t, resp.Close)
}

// requireOneDisconnect waits for shepherd_client_disconnects_total to count
// one disconnect in all, on route messages in phase.
func requireOneDisconnect(t *testing.T, url, phase string) {
	t.Helper()
	want := fmt.Sprintf(`phase=%q,route="messages"`, phase)
	require.Eventually(t, func() bool {
		m := kit.Metrics(t, url+"/metrics")
		return m.Value("shepherd_client_disconnects_total", want) == 1 &&
			m.Sum("shepherd_client_disconnects_total") == 1
	}, 3*time.Second, 20*time.Millisecond, "metrics: want shepherd_client_disconnects_total{%s} 1 and no other", want)
	// Counted once: nothing else comes later.
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, 1.0, kit.Metrics(t, url+"/metrics").Sum("shepherd_client_disconnects_total"))
}

// TestClientDisconnectOnKeepAliveRequest: a client that closes its
// keep-alive connection while its second request waits on a silent
// upstream is noticed as on a first request (the watcher registers the
// connection once, for all its requests): the upstream request is
// cancelled within about 100 ms and the disconnect is counted once; with
// the features on, and with limits.max_conns_per_ip (whose listener wraps
// the connection).
func TestClientDisconnectOnKeepAliveRequest(t *testing.T) {
	for _, tc := range []struct {
		name       string
		hooks      bool
		connsPerIP int
		stream     bool // the first request is a stream (a detached one, handed back to fasthttp)
	}{{"plain", false, 0, false}, {"hooks", true, 0, false}, {"max_conns_per_ip", false, 4, false},
		{"after_stream", false, 0, true}, {"after_stream/hooks", true, 0, true}, {"after_stream/max_conns_per_ip", false, 4, true}} {
		t.Run(tc.name, func(t *testing.T) {
			u := newFirstAnsweredUpstream(t)
			u.firstSSE = tc.stream
			h := newHarness(t, harnessOptions{Config: pointAt(u.URL(), func(c *config.Config) {
				c.Topics.Enabled = tc.hooks
				c.Limits.MaxConnsPerIP = tc.connsPerIP
			})})
			k := dialKeepAlive(t, h.URL)
			if tc.stream {
				k.sendBody(t, `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			} else {
				k.send(t)
			}
			k.answered(t)

			k.send(t)
			select {
			case <-u.got:
			case <-time.After(5 * time.Second):
				t.Fatal("the second request never reached the upstream")
			}
			time.Sleep(50 * time.Millisecond) // shepherd is waiting for the headers
			left := time.Now()
			require.NoError(t, k.c.Close())
			select {
			case at := <-u.closed:
				took := at.Sub(left)
				t.Logf("upstream connection closed %v after the client left", took)
				require.Less(t, took, 600*time.Millisecond)
			case <-time.After(5 * time.Second):
				t.Fatal("the upstream request was not cancelled after the client left")
			}
			requireOneDisconnect(t, h.URL, "waiting_upstream")
			requireNoRequestGoroutines(t)
		})
	}
}

// TestClientHalfClosesAfterKeepAliveRequest: a client that sends its second
// request on a keep-alive connection and shuts its side at once (the FIN
// may come before shepherd reads the request, while the connection is idle)
// is gone for that request: it is cancelled or never sent, and counted once.
func TestClientHalfClosesAfterKeepAliveRequest(t *testing.T) {
	u := newFirstAnsweredUpstream(t)
	h := newHarness(t, harnessOptions{Config: pointAt(u.URL(), nil)})
	k := dialKeepAlive(t, h.URL)
	k.send(t)
	k.answered(t)

	k.send(t)
	require.NoError(t, k.c.(*net.TCPConn).CloseWrite())
	requireOneDisconnect(t, h.URL, "waiting_upstream")
	requireNoRequestGoroutines(t)
	select {
	case <-u.got:
		// Sent before the close was seen: cancelled.
		select {
		case <-u.closed:
		case <-time.After(5 * time.Second):
			t.Fatal("the upstream request was not cancelled after the client left")
		}
	default:
	}
}
