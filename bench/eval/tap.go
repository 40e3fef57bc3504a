package eval

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Upstream is one request shepherd sent to the provider, as the tap saw
// it.
type Upstream struct {
	Path     string
	Request  []byte
	Status   int
	Response []byte
}

// tap is a recording forwarder between shepherd and the provider: it
// keeps every request body and response body, so the eval sees what the
// model was sent and what it answered, against the mock and a real
// provider alike. Responses are read whole before they are passed on (the
// eval's agent does not stream).
type tap struct {
	target *url.URL
	client *http.Client
	srv    *http.Server
	ln     net.Listener

	mu   sync.Mutex
	recs []Upstream
}

// hopHeaders are not forwarded (RFC 9110 7.6.1), nor Content-Length (the
// body is re-framed) or Accept-Encoding (the tap reads plain bodies).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Te", "Trailer",
	"Upgrade", "Content-Length", "Accept-Encoding", "Content-Encoding"}

// startTap listens on loopback and forwards to target (a base URL).
func startTap(target string) (*tap, error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("eval: upstream %q is not a base URL", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("eval: tap: %w", err)
	}
	t := &tap{target: u, ln: ln, client: &http.Client{Timeout: 5 * time.Minute}}
	t.srv = &http.Server{Handler: t, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = t.srv.Serve(ln) }()
	return t, nil
}

// URL is the tap's base URL.
func (t *tap) URL() string { return "http://" + t.ln.Addr().String() }

// Close stops the tap.
func (t *tap) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = t.srv.Shutdown(ctx)
}

// Len is the number of requests forwarded so far.
func (t *tap) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.recs)
}

// Since returns the requests from the i-th on.
func (t *tap) Since(i int) []Upstream {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i >= len(t.recs) {
		return nil
	}
	return append([]Upstream(nil), t.recs[i:]...)
}

func (t *tap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "tap: reading the request: "+err.Error(), http.StatusBadGateway)
		return
	}
	u := *t.target
	u.Path = strings.TrimSuffix(u.Path, "/") + r.URL.Path
	u.RawPath = ""
	u.RawQuery = r.URL.RawQuery
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, "tap: "+err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	resp, err := t.client.Do(out)
	if err != nil {
		http.Error(w, "tap: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, "tap: reading the response: "+err.Error(), http.StatusBadGateway)
		return
	}
	t.mu.Lock()
	t.recs = append(t.recs, Upstream{Path: r.URL.Path, Request: body, Status: resp.StatusCode, Response: respBody})
	t.mu.Unlock()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	for _, h := range hopHeaders {
		w.Header().Del(h)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(respBody)
}
