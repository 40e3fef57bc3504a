package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// scripted is a reply rich enough to exercise every block kind; its ID is
// fixed so two renderings are byte-identical.
func scripted(id string) mock.Reply {
	return mock.Reply{
		ID:        id,
		Text:      "Reading the file now, then I will summarise what it does.",
		Thinking:  &mock.Thinking{Text: "Need the file first.", Signature: "sig-abc123"},
		ToolCalls: []mock.ToolCall{{ID: "call_1", Name: "read_file", Args: `{"path":"main.go"}`}},
		Usage:     mock.Usage{Input: 40, Output: 31},
		Headers:   map[string]string{"Request-Id": "req_mock_1", "X-Upstream-Only": "kept"},
	}
}

// TestPassThroughByteIdentical: with no hook configured, the client receives
// exactly the status, body bytes and headers the upstream sent, for JSON, SSE
// and Gemini's JSON-array stream.
func TestPassThroughByteIdentical(t *testing.T) {
	for _, tc := range modelCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOptions{})
			h.mock.Script(scripted("msg_fixed"), scripted("msg_fixed"))

			direct, directBody := do(t, "POST", h.mock.URL()+tc.path, tc.body, tc.headers)
			via, viaBody := do(t, "POST", h.URL+tc.path, tc.body, tc.headers)

			require.Equal(t, direct.StatusCode, via.StatusCode)
			require.Equal(t, string(directBody), string(viaBody), "body bytes differ")
			require.NotEmpty(t, viaBody)
			for _, name := range []string{"Content-Type", "Request-Id", "X-Upstream-Only"} {
				require.Equal(t, direct.Header.Get(name), via.Header.Get(name), name)
			}
			if tc.stream {
				require.Empty(t, via.Header.Get("Server-Timing"), "no Server-Timing on streams")
			} else {
				require.Regexp(t, `^shepherd;dur=\d+\.\d{3}, upstream;dur=\d+\.\d{3}$`, via.Header.Get("Server-Timing"))
				require.Equal(t, direct.Header.Get("Content-Length"), via.Header.Get("Content-Length"))
			}
			require.NotEmpty(t, via.Header.Get("X-Shepherd-Request-Id"))
		})
	}
}

// TestSSEEventFlushedBeforeNextIsSent proves per-event flushing: the mock
// may not send event N+1 until the client has read event N through shepherd.
// A proxy that buffered would deadlock here and the read deadline fails it.
func TestSSEEventFlushedBeforeNextIsSent(t *testing.T) {
	for _, tc := range modelCases() {
		if !tc.stream || tc.name == "gemini_array" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gate := make(chan struct{})
			h := newHarness(t, harnessOptions{Mock: mock.Options{Gate: gate}})
			h.mock.Script(mock.Reply{Text: "one two three four five six seven eight", ChunkSize: 4})

			conn, err := net.Dial("tcp", strings.TrimPrefix(h.URL, "http://"))
			require.NoError(t, err)
			defer conn.Close()
			req, err := http.NewRequest("POST", h.URL+tc.path, strings.NewReader(tc.body))
			require.NoError(t, err)
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			require.NoError(t, req.Write(conn))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, req)
			require.NoError(t, err)
			require.Equal(t, 200, resp.StatusCode)
			events := bufio.NewReader(resp.Body)

			for i := 0; i < 6; i++ {
				require.NoError(t, conn.SetReadDeadline(time.Now().Add(3*time.Second)))
				ev := readEvent(t, events)
				require.NotEmpty(t, ev, "event %d", i)
				select { // release exactly one more event
				case gate <- struct{}{}:
				case <-time.After(3 * time.Second):
					t.Fatalf("mock never asked for event %d", i+1)
				}
			}
			// Drain the rest.
			go func() {
				for {
					select {
					case gate <- struct{}{}:
					case <-time.After(2 * time.Second):
						return
					}
				}
			}()
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
			_, _ = io.Copy(io.Discard, resp.Body)
		})
	}
}

// readEvent reads one SSE event (through its blank line).
func readEvent(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	var b strings.Builder
	for {
		line, err := r.ReadString('\n')
		b.WriteString(line)
		require.NoError(t, err, "reading event so far: %q", b.String())
		if line == "\n" || line == "\r\n" {
			if strings.TrimSpace(b.String()) == "" {
				b.Reset()
				continue
			}
			return b.String()
		}
	}
}

// TestForwardsHeadersAndQuery: end-to-end headers and the query string reach
// the upstream; hop-by-hop headers and those named in Connection do not; the
// Host is the upstream's.
func TestForwardsHeadersAndQuery(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	headers := anthropicHeaders()
	headers["Anthropic-Beta"] = "prompt-caching-2024-07-31,claude-code-20250219"
	headers["X-Stainless-Lang"] = "go"
	headers["User-Agent"] = "claude-cli/2.1.90 (external, cli)"
	headers["Connection"] = "X-Hop-Secret"
	headers["X-Hop-Secret"] = "must-not-pass"
	headers["Proxy-Authorization"] = "Basic Zm9vOmJhcg=="
	headers["Te"] = "trailers"
	body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	resp, _ := do(t, "POST", h.URL+"/v1/messages?beta=true&x=%2Fy", body, headers)
	require.Equal(t, 200, resp.StatusCode)

	got, ok := h.mock.Last()
	require.True(t, ok)
	require.Equal(t, "/v1/messages", got.Path)
	require.Equal(t, "beta=true&x=%2Fy", got.Query)
	require.Equal(t, body, string(got.Body))
	require.Equal(t, "sk-ant-test", got.Header.Get("X-Api-Key"))
	require.Equal(t, "2023-06-01", got.Header.Get("Anthropic-Version"))
	require.Equal(t, "prompt-caching-2024-07-31,claude-code-20250219", got.Header.Get("Anthropic-Beta"))
	require.Equal(t, "go", got.Header.Get("X-Stainless-Lang"))
	require.Equal(t, "claude-cli/2.1.90 (external, cli)", got.Header.Get("User-Agent"))
	for _, hop := range []string{"X-Hop-Secret", "Proxy-Authorization", "Te", "Keep-Alive"} {
		require.Empty(t, got.Header.Get(hop), hop)
	}
	require.Equal(t, strings.TrimPrefix(h.mock.URL(), "http://"), got.Header.Get("Host"))
}

// TestPassThroughOtherPaths: paths that are not model routes go to the
// provider chosen by prefix and headers, unchanged.
func TestPassThroughOtherPaths(t *testing.T) {
	h := newHarness(t, harnessOptions{Mock: mock.Options{Models: []string{"model-a", "model-b"}}})
	direct, directBody := do(t, "GET", h.mock.URL()+"/v1/models?limit=2", "", anthropicHeaders())
	via, viaBody := do(t, "GET", h.URL+"/v1/models?limit=2", "", anthropicHeaders())
	require.Equal(t, direct.StatusCode, via.StatusCode)
	require.Equal(t, string(directBody), string(viaBody))
	got, _ := h.mock.Last()
	require.Equal(t, "GET", got.Method)
	require.Equal(t, "limit=2", got.Query)

	via, viaBody = do(t, "GET", h.URL+"/v1beta/models", "", geminiHeaders())
	require.Equal(t, 200, via.StatusCode)
	require.Contains(t, string(viaBody), "model-a")
}

// TestErrorsInProviderShape covers shepherd's own errors, each in the calling
// API's error JSON.
func TestErrorsInProviderShape(t *testing.T) {
	h := newHarness(t, harnessOptions{Config: func(c *config.Config) { c.Limits.MaxBodyBytes = 4096 }})
	openaiShape := func(t *testing.T, status int, b []byte) {
		require.NotEmpty(t, gjson.GetBytes(b, "error.message").String(), string(b))
		require.NotEmpty(t, gjson.GetBytes(b, "error.type").String())
	}
	// shapes are the error shapes by the kit driver name of the route's API.
	shapes := map[string]func(t *testing.T, status int, b []byte){
		"anthropic": func(t *testing.T, status int, b []byte) {
			require.Equal(t, "error", gjson.GetBytes(b, "type").String(), string(b))
			require.NotEmpty(t, gjson.GetBytes(b, "error.type").String())
			require.NotEmpty(t, gjson.GetBytes(b, "error.message").String())
		},
		"openai_chat":      openaiShape,
		"openai_responses": openaiShape,
		"gemini": func(t *testing.T, status int, b []byte) {
			require.Equal(t, int64(status), gjson.GetBytes(b, "error.code").Int(), string(b))
			require.NotEmpty(t, gjson.GetBytes(b, "error.status").String())
			require.NotEmpty(t, gjson.GetBytes(b, "error.message").String())
		},
	}
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`
	tests := []struct {
		name, method, path, body, shape string
		headers                         map[string]string
		status                          int
		errType                         string
	}{
		{"anthropic malformed", "POST", "/v1/messages", `{"model":`, "anthropic", anthropicHeaders(), 400, "invalid_request_error"},
		{"anthropic wrong type", "POST", "/v1/messages", `{"model":"m","max_tokens":"lots","messages":[]}`, "anthropic", anthropicHeaders(), 400, "invalid_request_error"},
		{"chat malformed", "POST", "/v1/chat/completions", `not json`, "openai_chat", openaiHeaders(), 400, "invalid_request_error"},
		{"chat messages not array", "POST", "/v1/chat/completions", `{"model":"m","messages":"hi"}`, "openai_chat", openaiHeaders(), 400, "invalid_request_error"},
		{"responses malformed", "POST", "/v1/responses", `{"input": [}`, "openai_responses", openaiHeaders(), 400, "invalid_request_error"},
		{"gemini malformed", "POST", "/v1beta/models/g:generateContent", `{"contents":`, "gemini", geminiHeaders(), 400, "INVALID_ARGUMENT"},
		{"anthropic too large", "POST", "/v1/messages", big, "anthropic", anthropicHeaders(), 413, "request_too_large"},
		{"chat too large", "POST", "/v1/chat/completions", big, "openai_chat", openaiHeaders(), 413, ""},
		{"gemini too large", "POST", "/v1beta/models/g:generateContent", big, "gemini", geminiHeaders(), 413, ""},
		{"unknown route openai", "GET", "/nope", "", "openai_chat", nil, 404, ""},
		{"unknown route anthropic", "POST", "/v2/messages", `{}`, "anthropic", anthropicHeaders(), 404, "not_found_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(h.mock.Requests())
			resp, b := do(t, tt.method, h.URL+tt.path, tt.body, tt.headers)
			require.Equal(t, tt.status, resp.StatusCode, string(b))
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			shapes[tt.shape](t, tt.status, b)
			if tt.errType != "" {
				require.Equal(t, tt.errType, kit.Get(t, tt.shape).ErrorType(b))
			}
			require.Equal(t, before, len(h.mock.Requests()), "a rejected request must not reach the upstream")
		})
	}
}

// TestUpstreamFailures: unreachable → 502, silent → 504, provider errors pass
// through with body and retry-after.
func TestUpstreamFailures(t *testing.T) {
	t.Run("unreachable", func(t *testing.T) {
		dead := "http://" + kit.FreeAddr(t)
		h := newHarness(t, harnessOptions{Config: func(c *config.Config) {
			c.Upstreams.Anthropic, c.Upstreams.OpenAI, c.Upstreams.Gemini = dead, dead, dead
		}})
		for _, tc := range modelCases() {
			resp, b := do(t, "POST", h.URL+tc.path, tc.body, tc.headers)
			require.Equal(t, 502, resp.StatusCode, tc.name)
			require.True(t, gjson.ValidBytes(b), tc.name)
			require.Contains(t, string(b), "upstream unreachable", tc.name)
			require.NotContains(t, string(b), strings.TrimPrefix(dead, "http://"), "no internal address leaks")
		}
	})
	t.Run("timeout", func(t *testing.T) {
		h := newHarness(t, harnessOptions{
			Mock:   mock.Options{HeaderDelay: 3 * time.Second},
			Config: func(c *config.Config) { c.Limits.UpstreamTimeout = 300 * time.Millisecond },
		})
		for _, tc := range []apiCase{modelCases()[0], modelCases()[3], modelCases()[6]} {
			start := time.Now()
			resp, b := do(t, "POST", h.URL+tc.path, tc.body, tc.headers)
			require.Equal(t, 504, resp.StatusCode, tc.name)
			require.Less(t, time.Since(start), 2*time.Second, "504 must come at the timeout, not after the upstream")
			require.True(t, gjson.ValidBytes(b))
		}
	})
	t.Run("provider error passes through", func(t *testing.T) {
		h := newHarness(t, harnessOptions{})
		for _, tc := range modelCases() {
			limited := mock.Reply{ID: "rl_1", Status: 429, ErrorMessage: "slow down", RetryAfter: "7"}
			h.mock.Script(limited, limited)
			direct, db := do(t, "POST", h.mock.URL()+tc.path, tc.body, tc.headers)
			via, vb := do(t, "POST", h.URL+tc.path, tc.body, tc.headers)
			require.Equal(t, 429, via.StatusCode, tc.name)
			require.Equal(t, direct.StatusCode, via.StatusCode)
			require.Equal(t, string(db), string(vb), tc.name)
			require.Equal(t, "7", via.Header.Get("Retry-After"), tc.name)
		}
	})
	t.Run("mid-stream break gets the API's error event", func(t *testing.T) {
		h := newHarness(t, harnessOptions{})
		h.mock.Script(mock.Reply{Text: strings.Repeat("abcd ", 40), CutAfterEvents: 3})
		resp, b := do(t, "POST", h.URL+"/v1/messages", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, anthropicHeaders())
		require.Equal(t, 200, resp.StatusCode)
		require.Contains(t, string(b), "event: message_start")
		require.True(t, strings.HasSuffix(string(b), "\n\n"))
		last := string(b[bytes.LastIndex(b[:len(b)-2], []byte("\n\n"))+2:])
		require.True(t, strings.HasPrefix(last, "event: error\n"), "last event: %q", last)
		require.Contains(t, last, `"type":"error"`)
	})
}

// TestClientDisconnectCancelsUpstream: when the agent goes away mid-stream,
// shepherd closes the upstream connection. A raw TCP upstream observes the
// close directly.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	up := kit.Listen(t)
	defer up.Close()
	closed := make(chan struct{})
	go func() {
		c, err := up.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		ev := "event: message_start\ndata: {\"type\":\"message_start\"}\n\n"
		_, _ = io.WriteString(c, chunk(ev))
		// Keep streaming pings until the proxy hangs up.
		for i := 0; i < 200; i++ {
			time.Sleep(25 * time.Millisecond)
			if _, err := io.WriteString(c, chunk("event: ping\ndata: {\"type\":\"ping\"}\n\n")); err != nil {
				close(closed)
				return
			}
		}
	}()
	h := newHarness(t, harnessOptions{Config: func(c *config.Config) { c.Upstreams.Anthropic = "http://" + up.Addr().String() }})

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", h.URL+"/v1/messages",
		strings.NewReader(`{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := rawClient.Do(req)
	require.NoError(t, err)
	first := readEvent(t, bufio.NewReader(resp.Body))
	require.Contains(t, first, "message_start")
	cancel()
	resp.Body.Close()
	select {
	case <-closed:
	case <-time.After(4 * time.Second):
		t.Fatal("upstream connection still open after the client left")
	}
}

func chunk(s string) string {
	return strings.ToUpper(strconvHex(len(s))) + "\r\n" + s + "\r\n"
}

func strconvHex(n int) string {
	const digits = "0123456789abcdef"
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 16 {
		b = append([]byte{digits[n%16]}, b...)
	}
	return string(b)
}

// TestGracefulShutdown: open streams finish within the grace period; streams
// still open when it ends are cut with the API's error event.
func TestGracefulShutdown(t *testing.T) {
	body := `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	t.Run("stream finishes within grace", func(t *testing.T) {
		h := newHarness(t, harnessOptions{Mock: mock.Options{InterEventDelay: 20 * time.Millisecond}})
		h.mock.Script(mock.Reply{Text: strings.Repeat("word ", 30), ChunkSize: 10})
		req, _ := http.NewRequest("POST", h.URL+"/v1/messages", strings.NewReader(body))
		resp, err := rawClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		readEvent(t, br)
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			done <- h.srv.Shutdown(ctx)
		}()
		rest, err := io.ReadAll(br)
		require.NoError(t, err)
		require.Contains(t, string(rest), "event: message_stop")
		require.NoError(t, <-done)
	})
	t.Run("grace expiry cuts open streams", func(t *testing.T) {
		h := newHarness(t, harnessOptions{Mock: mock.Options{Hold: 20 * time.Second, PingEvery: 50 * time.Millisecond}})
		req, _ := http.NewRequest("POST", h.URL+"/v1/messages", strings.NewReader(body))
		resp, err := rawClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		readEvent(t, br)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		require.NoError(t, h.srv.Shutdown(ctx))
		require.Less(t, time.Since(start), 8*time.Second)
		rest, _ := io.ReadAll(br)
		require.Contains(t, string(rest), "event: error", "the cut stream ends with the API's error event")
		require.Contains(t, string(rest), "shutting down")
	})
}

// TestSessionsAndAdmin: the resolved session id comes back in
// X-Shepherd-Session, is recorded in the store, and is visible through the
// guarded sessions API; health, readiness and metrics answer.
func TestSessionsAndAdmin(t *testing.T) {
	h := newHarness(t, harnessOptions{Config: func(c *config.Config) { c.Admin.Token = "adm1n" }})
	hdr := anthropicHeaders()
	hdr["X-Claude-Code-Session-Id"] = "sess-42"
	body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	for i := 0; i < 3; i++ {
		resp, _ := do(t, "POST", h.URL+"/v1/messages", body, hdr)
		require.Equal(t, "sess-42", resp.Header.Get("X-Shepherd-Session"))
	}
	// Fingerprint fallback: the same conversation up to the first model
	// turn, the same session. An opening request (no model turn yet) has
	// none here: with every feature off there is no state to keep.
	r0, _ := do(t, "POST", h.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"fix the bug"}]}`, openaiHeaders())
	require.Empty(t, r0.Header.Get("X-Shepherd-Session"))
	r1, _ := do(t, "POST", h.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"fix the bug"},{"role":"assistant","content":"ok"},{"role":"user","content":"more"}]}`, openaiHeaders())
	r2, _ := do(t, "POST", h.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"fix the bug"},{"role":"assistant","content":"ok","refusal":null},{"role":"user","content":"more"},{"role":"assistant","content":"done"},{"role":"user","content":"thanks"}]}`, openaiHeaders())
	require.True(t, strings.HasPrefix(r1.Header.Get("X-Shepherd-Session"), "fp-"))
	require.Equal(t, r1.Header.Get("X-Shepherd-Session"), r2.Header.Get("X-Shepherd-Session"))

	resp, _ := do(t, "GET", h.URL+"/shepherd/v1/sessions", "", nil)
	require.Equal(t, 401, resp.StatusCode)
	auth := map[string]string{"Authorization": "Bearer adm1n"}
	require.Eventually(t, func() bool {
		_, b := do(t, "GET", h.URL+"/shepherd/v1/sessions/sess-42", "", auth)
		return gjson.GetBytes(b, "requests").Int() == 3
	}, 3*time.Second, 20*time.Millisecond)
	resp, b := do(t, "GET", h.URL+"/shepherd/v1/sessions", "", auth)
	require.Equal(t, 200, resp.StatusCode)
	require.GreaterOrEqual(t, len(gjson.GetBytes(b, "sessions").Array()), 2)
	require.NotContains(t, string(b), "sk-ant-test", "credentials are never stored")
	resp, _ = do(t, "GET", h.URL+"/shepherd/v1/sessions/nope", "", auth)
	require.Equal(t, 404, resp.StatusCode)

	resp, _ = do(t, "GET", h.URL+"/healthz", "", nil)
	require.Equal(t, 200, resp.StatusCode)
	resp, _ = do(t, "GET", h.URL+"/readyz", "", nil)
	require.Equal(t, 200, resp.StatusCode)
	resp, b = do(t, "GET", h.URL+"/metrics", "", nil)
	require.Equal(t, 200, resp.StatusCode)
	m, err := kit.ParseMetrics(bytes.NewReader(b))
	require.NoError(t, err)
	require.Equal(t, 3.0, m.Value("shepherd_requests_total", `route="messages",status="200"`))
	require.True(t, m.IsHistogram("shepherd_upstream_duration_seconds"))
	require.True(t, m.IsHistogram("shepherd_overhead_seconds"))
}

// TestReadyzReportsStoreDown: /readyz is 503 while the store cannot answer,
// and requests still pass (the store is off the request path).
func TestReadyzReportsStoreDown(t *testing.T) {
	st := &failingStore{}
	h := newHarness(t, harnessOptions{Store: st})
	resp, b := do(t, "GET", h.URL+"/readyz", "", nil)
	require.Equal(t, 503, resp.StatusCode)
	require.Contains(t, string(b), "unavailable")
	// A conversation past its first model turn: it has a (fingerprint)
	// session, which the recorder updates.
	resp, _ = do(t, "POST", h.URL+"/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"user","content":"more"}]}`, anthropicHeaders())
	require.Equal(t, 200, resp.StatusCode)
	require.Eventually(t, func() bool { return st.updates.Load() > 0 }, 2*time.Second, 10*time.Millisecond)
	require.Equal(t, 1.0, kit.Metrics(t, h.URL+"/metrics").Value("shepherd_store_errors_total", `op="update"`))
}

// TestUpstreamPathPrefix: a base URL with a path prefix is honoured.
func TestUpstreamPathPrefix(t *testing.T) {
	var hits atomic.Int32
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != "/gateway/anthropic/v1/messages" {
			w.WriteHeader(404)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	})}
	ln := kit.Listen(t)
	go func() { _ = up.Serve(ln) }()
	defer up.Close()
	h := newHarness(t, harnessOptions{Config: func(c *config.Config) {
		c.Upstreams.Anthropic = "http://" + ln.Addr().String() + "/gateway/anthropic/"
	}})
	resp, b := do(t, "POST", h.URL+"/v1/messages", `{"model":"m","max_tokens":1,"messages":[]}`, anthropicHeaders())
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, `{"ok":true}`, string(b))
	require.Equal(t, int32(1), hits.Load())
}

// TestStreamIdleTimeout: an upstream stream silent for longer than
// limits.stream_idle_timeout is cut with the API's error event.
func TestStreamIdleTimeout(t *testing.T) {
	h := newHarness(t, harnessOptions{
		Mock:   mock.Options{Hold: 10 * time.Second, PingEvery: 5 * time.Second},
		Config: func(c *config.Config) { c.Limits.StreamIdleTimeout = 300 * time.Millisecond },
	})
	start := time.Now()
	resp, b := do(t, "POST", h.URL+"/v1/messages", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, anthropicHeaders())
	require.Equal(t, 200, resp.StatusCode)
	require.Less(t, time.Since(start), 4*time.Second)
	require.Contains(t, string(b), "event: message_start")
	require.Contains(t, string(b), "event: error")
	require.Contains(t, string(b), "upstream did not answer in time")
}

// TestSessionsInRedis: with the Redis backend, sessions recorded by one
// shepherd are visible through another shepherd's sessions API (the
// replicas share state). Needs REDIS_URL (make test starts a private server).
func TestSessionsInRedis(t *testing.T) {
	url := kit.RedisURL(t)
	prefix := fmt.Sprintf("shepherd-proxytest-%d", time.Now().UnixNano())
	open := func() state.Store {
		st, err := state.NewRedis(state.RedisOptions{URL: url, KeyPrefix: prefix, TTL: time.Minute, Timeout: time.Second})
		require.NoError(t, err)
		return st
	}
	a := newHarness(t, harnessOptions{Store: open()})
	b := newHarness(t, harnessOptions{Store: open()})
	hdr := anthropicHeaders()
	hdr["X-Claude-Code-Session-Id"] = "redis-sess-1"
	body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	for i := 0; i < 2; i++ {
		resp, _ := do(t, "POST", a.URL+"/v1/messages", body, hdr)
		require.Equal(t, 200, resp.StatusCode)
	}
	resp, _ := do(t, "POST", b.URL+"/v1/messages", body, hdr)
	require.Equal(t, 200, resp.StatusCode)
	require.Eventually(t, func() bool {
		_, got := do(t, "GET", b.URL+"/shepherd/v1/sessions/redis-sess-1", "", nil)
		return gjson.GetBytes(got, "requests").Int() == 3
	}, 5*time.Second, 20*time.Millisecond, "both replicas' requests counted in one shared session")
	resp, _ = do(t, "GET", a.URL+"/readyz", "", nil)
	require.Equal(t, 200, resp.StatusCode)
	cleanupRedisPrefix(t, url, prefix)
}

// TestMalformedMessageNamesField: the 400 names what is wrong in the
// client's terms, without Go package prefixes.
func TestMalformedMessageNamesField(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	_, b := do(t, "POST", h.URL+"/v1/chat/completions", `{"model":"m","messages":"hi"}`, openaiHeaders())
	require.Equal(t, "malformed request body: messages must be an array", gjson.GetBytes(b, "error.message").String())
}
