package proxy_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// recordingUpstream is a plain HTTP server standing in for all providers: it
// records the raw request target, headers and body of every request it gets
// and answers a small JSON body.
type recordingUpstream struct {
	srv  *http.Server
	URL  string
	mu   sync.Mutex
	reqs []recordedRequest
}

type recordedRequest struct {
	Target string // as on the wire (RequestURI)
	Header http.Header
	Body   []byte
}

func newRecordingUpstream(t *testing.T) *recordingUpstream {
	t.Helper()
	ln := kit.Listen(t)
	u := &recordingUpstream{URL: "http://" + ln.Addr().String()}
	u.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, recordedRequest{Target: r.RequestURI, Header: r.Header.Clone(), Body: b})
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, replyFor(r.URL.Path))
	})}
	go func() { _ = u.srv.Serve(ln) }()
	t.Cleanup(func() { _ = u.srv.Close() })
	return u
}

func (u *recordingUpstream) requests() []recordedRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]recordedRequest(nil), u.reqs...)
}

// startTrustProxy starts shepherd in front of up, every provider's base URL
// carrying the path prefix /base, and returns its address (host:port).
func startTrustProxy(t *testing.T, up *recordingUpstream, tune func(*config.Config)) string {
	t.Helper()
	cfg := config.Defaults()
	cfg.Upstreams.Anthropic = up.URL + "/base"
	cfg.Upstreams.OpenAI = up.URL + "/base"
	cfg.Upstreams.Gemini = up.URL + "/base"
	cfg.Admin.Listen = ""
	cfg.Listen = "127.0.0.1:0"
	cfg.Topics.Enabled = false
	cfg.Intents.Enabled = config.SwitchOff
	cfg.Recovery.Enabled = false
	cfg.Edits.Enabled = false
	if tune != nil {
		tune(&cfg)
	}
	require.NoError(t, cfg.Validate())
	st := state.NewMemory(state.MemoryOptions{MaxSessions: 100, TTL: time.Hour})
	metrics := proxy.NewMetrics()
	log := zaptest.NewLogger(t)
	features, err := proxy.BuildFeatures(&cfg, metrics, log)
	require.NoError(t, err)
	srv, err := proxy.New(proxy.Options{Config: &cfg, Logger: log, Store: st, Metrics: metrics, Features: features})
	require.NoError(t, err)
	url := kit.Serve(t, srv, func() { _ = features.Close() }, func() { _ = st.Close() })
	return strings.TrimPrefix(url, "http://")
}

// rawExchange writes raw to a new connection to addr and reads until the
// server closes the connection or wait passes. closed reports whether the
// server closed it (a timeout leaves it false).
func rawExchange(t *testing.T, addr, raw string, wait time.Duration) (out string, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, raw)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(wait)))
	b, err := io.ReadAll(c)
	// The server closing is EOF, or a reset when it closed with our
	// pipelined bytes unread.
	return string(b), err == nil || errors.Is(err, syscall.ECONNRESET)
}

// responseCount counts HTTP/1.1 status lines in a raw response stream.
func responseCount(raw string) int { return strings.Count(raw, "HTTP/1.1 ") }

// rawBody returns the body of the first response in raw (bodies shepherd
// writes for errors carry a Content-Length).
func rawBody(raw string) string {
	_, body, _ := strings.Cut(raw, "\r\n\r\n")
	if i := strings.Index(body, "HTTP/1.1 "); i >= 0 {
		body = body[:i]
	}
	return body
}

// replyFor is a minimal valid non-streaming reply of the API path names.
func replyFor(path string) string {
	for _, d := range kit.Drivers() {
		if d.Serves(path) {
			return d.MinimalReply()
		}
	}
	return `{"ok":true}`
}
