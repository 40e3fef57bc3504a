// Package mock is a scripted fake LLM provider speaking the Anthropic
// Messages, OpenAI Chat Completions, OpenAI Responses and Gemini
// generateContent wire formats on one port, for end-to-end tests and load
// benchmarks of the proxy.
//
// The server is fasthttp. Streams are served from an io.Reader handed to
// SetBodyStream rather than SetBodyStreamWriter: fasthttp turns each Read into
// one HTTP chunk and flushes it, so every event reaches the socket on its own,
// and a Read error lets the mock drop the connection without the final chunk
// (CutAfterEvents), which a StreamWriter cannot do.
package mock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Server is a scripted mock provider. All methods are safe for concurrent use.
type Server struct {
	opts Options

	srv  *fasthttp.Server
	url  atomic.Pointer[string]
	done chan struct{}

	closeOnce sync.Once

	seq atomic.Uint64 // model replies served

	cache *promptCache // nil unless Options.PromptCache

	qmu   sync.Mutex
	queue []Reply

	named map[string]*namedScript

	rmu      sync.Mutex
	requests []Recorded

	cmu   sync.Mutex
	conns map[*trackedConn]struct{}
	lns   []net.Listener
}

type namedScript struct {
	replies []Reply
	next    atomic.Uint64
}

// DefaultCreated is the fixed created timestamp used when Options.Created is 0.
const DefaultCreated = 1700000000

// New returns a server configured by opts; call Start or Serve to run it.
func New(opts Options) *Server {
	if opts.ChunkSize == 0 {
		opts.ChunkSize = 16
	}
	if opts.Created == 0 {
		opts.Created = DefaultCreated
	}
	if len(opts.Models) == 0 {
		opts.Models = []string{"claude-sonnet-4-5", "gpt-4o", "gemini-2.5-flash"}
	} else {
		opts.Models = append([]string(nil), opts.Models...)
	}
	d := &opts.Default
	if d.Text == "" && d.Thinking == nil && len(d.ToolCalls) == 0 && d.Status == 0 &&
		d.PadText == 0 && opts.PadText == 0 {
		d.Text = "ok"
	}
	s := &Server{
		opts:  opts,
		done:  make(chan struct{}),
		named: make(map[string]*namedScript, len(opts.Named)),
	}
	if opts.PromptCache {
		s.cache = newPromptCache(opts.PromptCacheTTL)
	}
	for name, rs := range opts.Named {
		if len(rs) > 0 {
			s.named[name] = &namedScript{replies: append([]Reply(nil), rs...)}
		}
	}
	s.srv = &fasthttp.Server{
		Handler:               s.handle,
		Name:                  "mockprovider",
		NoDefaultServerHeader: true,
		ReadBufferSize:        32 << 10,
		MaxRequestBodySize:    64 << 20,
		Logger:                log.New(io.Discard, "", 0),
	}
	return s
}

// Handler returns the fasthttp handler, to mount the mock on any fasthttp
// server. Close then only abandons the mock's pending waits; the connections
// belong to that server.
func (s *Server) Handler() fasthttp.RequestHandler { return s.handle }

// Start listens on Options.Addr (default 127.0.0.1:0) and serves in the
// background.
func (s *Server) Start() error {
	addr := s.opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.setURL(ln)
	go func() { _ = s.Serve(ln) }()
	return nil
}

// Serve serves on ln until Close; it blocks. The first listener served sets
// URL.
func (s *Server) Serve(ln net.Listener) error {
	s.url.CompareAndSwap(nil, addrURL(ln))
	s.cmu.Lock()
	select {
	case <-s.done:
		s.cmu.Unlock()
		_ = ln.Close()
		return errClosed
	default:
	}
	s.lns = append(s.lns, ln)
	s.cmu.Unlock()
	return s.srv.Serve(&trackingListener{Listener: ln, s: s})
}

func addrURL(ln net.Listener) *string {
	u := "http://" + ln.Addr().String()
	return &u
}

func (s *Server) setURL(ln net.Listener) { s.url.Store(addrURL(ln)) }

// URL is the base URL of a started server, e.g. http://127.0.0.1:40123.
func (s *Server) URL() string {
	if u := s.url.Load(); u != nil {
		return *u
	}
	return ""
}

// Close stops the server: pending delays, holds and gates are abandoned and
// open connections are closed.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.cmu.Lock()
		close(s.done)
		for _, ln := range s.lns {
			_ = ln.Close()
		}
		// fasthttp's Shutdown waits up to 5 s for young keep-alive
		// connections; close them all now instead.
		for c := range s.conns {
			_ = c.Conn.Close()
		}
		s.cmu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.srv.ShutdownWithContext(ctx)
	})
}

// trackingListener records accepted connections so Close can drop them.
type trackingListener struct {
	net.Listener
	s *Server
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, s: l.s}
	l.s.cmu.Lock()
	defer l.s.cmu.Unlock()
	select {
	case <-l.s.done:
		_ = c.Close()
		return tc, nil // fasthttp sees the closed connection fail at once
	default:
	}
	if l.s.conns == nil {
		l.s.conns = make(map[*trackedConn]struct{})
	}
	l.s.conns[tc] = struct{}{}
	return tc, nil
}

type trackedConn struct {
	net.Conn
	s *Server
}

func (c *trackedConn) Close() error {
	c.s.cmu.Lock()
	delete(c.s.conns, c)
	c.s.cmu.Unlock()
	return c.Conn.Close()
}

// Script enqueues replies, consumed first-in first-out by model requests of
// any API (requests carrying X-Mock-Script excepted).
func (s *Server) Script(replies ...Reply) {
	s.qmu.Lock()
	s.queue = append(s.queue, replies...)
	s.qmu.Unlock()
}

// Pending returns the number of scripted replies not yet consumed.
func (s *Server) Pending() int {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	return len(s.queue)
}

// Served returns the number of model replies served so far; it is also the
// counter the derived ids are built from.
func (s *Server) Served() uint64 { return s.seq.Load() }

// Requests returns copies of the recorded requests, oldest first.
func (s *Server) Requests() []Recorded {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	out := make([]Recorded, len(s.requests))
	for i, r := range s.requests {
		out[i] = r.clone()
	}
	return out
}

// Last returns a copy of the most recent recorded request; ok is false when
// none.
func (s *Server) Last() (r Recorded, ok bool) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if len(s.requests) == 0 {
		return Recorded{}, false
	}
	return s.requests[len(s.requests)-1].clone(), true
}

func (r Recorded) clone() Recorded {
	r.Header = r.Header.Clone()
	r.Body = append([]byte(nil), r.Body...)
	return r
}

// Reset forgets recorded requests and drops scripted replies still queued.
// The id counter is not reset.
func (s *Server) Reset() {
	s.rmu.Lock()
	s.requests = nil
	s.rmu.Unlock()
	s.qmu.Lock()
	s.queue = nil
	s.qmu.Unlock()
}

// next picks the reply for a model request recorded as req.
func (s *Server) next(script string, req Recorded) (Reply, error) {
	if script == "" && s.opts.Responder != nil {
		if r, ok := s.opts.Responder(req); ok {
			return r, nil
		}
	}
	if script != "" {
		ns := s.named[script]
		if ns == nil {
			return Reply{}, fmt.Errorf("mock: unknown script %q", script)
		}
		i := ns.next.Add(1) - 1
		return ns.replies[i%uint64(len(ns.replies))], nil
	}
	s.qmu.Lock()
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue[0] = Reply{}
		s.queue = s.queue[1:]
		s.qmu.Unlock()
		return r, nil
	}
	s.qmu.Unlock()
	return s.opts.Default, nil
}

// record appends the request to the log (unless NoRecord) and returns it.
// With NoRecord and no Responder only Script is filled in, so load tests pay
// nothing for it.
func (s *Server) record(ctx *fasthttp.RequestCtx, api string, stream bool) Recorded {
	if s.opts.NoRecord && s.opts.Responder == nil {
		return Recorded{Script: string(ctx.Request.Header.Peek(scriptHeader))}
	}
	h := make(http.Header)
	for k, v := range ctx.Request.Header.All() {
		ck := http.CanonicalHeaderKey(string(k))
		h[ck] = append(h[ck], string(v))
	}
	rec := Recorded{
		Method: string(ctx.Method()),
		Path:   string(ctx.Path()),
		Query:  string(ctx.URI().QueryString()),
		Header: h,
		Body:   append([]byte(nil), ctx.PostBody()...),
		Time:   time.Now(),
		API:    api,
		Stream: stream,
		Script: string(ctx.Request.Header.Peek(scriptHeader)),
	}
	if s.opts.NoRecord {
		return rec
	}
	s.rmu.Lock()
	s.requests = append(s.requests, rec.clone())
	s.rmu.Unlock()
	return rec
}

var errClosed = errors.New("mock: server closed")

// sleep waits d or until the server closes; it reports whether it completed.
func (s *Server) sleep(d time.Duration) bool {
	if d <= 0 {
		select {
		case <-s.done:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.done:
		return false
	}
}
