// Package proxy is shepherd's HTTP layer: the fasthttp server and its routes,
// body limits, upstream clients, SSE pass-through with per-event flushing,
// the hook chain's call sites, and the admin endpoints.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/console"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/logging"
	"github.com/shepherd-proxy/shepherd/pricing"
	"github.com/shepherd-proxy/shepherd/proxy/turn"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/state"
)

// Options are what a Server is built from. Config must already be validated.
type Options struct {
	Config *config.Config
	Logger *zap.Logger
	Store  state.Store
	// Features are the hook chains to run (BuildFeatures); nil runs none.
	// The caller keeps ownership and closes them after Shutdown.
	Features *Features
	Metrics  *Metrics
	// Events is the live feed the proxy, the turn engine and the admin
	// feed endpoints use (nil: events.Nop, and the feed endpoints answer
	// 404). A feed.Publisher also wakes the open feeds of this replica.
	Events events.Emitter
	// Prices turns usage into cost (pricing.New(cfg.Pricing.Models), built
	// once at start-up); nil builds it from Config.
	Prices *pricing.Table
	// Tracing is the tracer provider of the request spans (tracing.New
	// when tracing.enabled; tests pass one with an in-memory exporter);
	// nil, the default, traces nothing at no cost (tracing.go). The caller
	// shuts it down after Shutdown.
	Tracing trace.TracerProvider
}

// Server is shepherd's proxy. Build it with New, run it with Serve or
// ListenAndServe, stop it with Shutdown. All fields are set once in New and
// read-only afterwards, except the stream registry and the listeners.
type Server struct {
	cfg       *config.Config
	log       *zap.Logger
	store     state.Store
	features  *Features
	engine    *turn.Engine
	metrics   *Metrics
	views     *rewrite.ViewCache // the codecs' view cache (cfg.Limits.ViewCacheBytes)
	upstreams map[Provider]*upstream
	router    *router // nil: no routing rule (route_select.go)
	recorder  *sessionRecorder
	metricsH  fasthttp.RequestHandler
	console   *console.Handler // the web console on the admin endpoints
	events    events.Emitter   // never nil
	tracer    *tracer          // nil: tracing off (tracing.go)
	feeds     *feedSet         // the SSE feeds (admin_events.go)

	srv      *fasthttp.Server
	adminSrv *fasthttp.Server

	// bodyRoutes maps a request header being read to its route while its
	// body is read (refused_route.go).
	bodyRoutes sync.Map

	streams   streamRegistry
	detached  detachedStreams    // streams served off fasthttp (stream_detach.go)
	stopping  atomic.Bool        // Shutdown began: detached streams close their connections
	watcher   *disconnectWatcher // nil: clients are found gone only by writes
	ridPrefix string
	ridSeq    atomicCounter

	mu        sync.Mutex
	listeners []net.Listener
}

// New builds a Server from validated options.
func New(o Options) (*Server, error) {
	if o.Config == nil || o.Store == nil {
		return nil, errors.New("proxy: Config and Store are required")
	}
	// One redacting core for every line the proxy and its libraries write.
	o.Logger = logging.Redacting(o.Logger)
	if o.Metrics == nil {
		o.Metrics = NewMetrics()
	}
	cfg := o.Config
	s := &Server{
		cfg:       cfg,
		log:       o.Logger,
		store:     o.Store,
		features:  o.Features,
		metrics:   o.Metrics,
		views:     rewrite.NewViewCache(cfg.Limits.ViewCacheBytes),
		upstreams: map[Provider]*upstream{},
		ridPrefix: newRequestIDPrefix(),
		metricsH:  newMetricsHandler(o.Metrics),
		tracer:    newTracer(o.Tracing),
	}
	if o.Prices == nil {
		prices, err := pricing.New(cfg.Pricing.Models)
		if err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
		o.Prices = prices
	}
	s.events, s.feeds = emitterOrNop(o.Events), newFeedSet(cfg, o.Store, o.Events, o.Metrics)
	s.engine = newEngine(cfg, o.Store, o.Metrics, o.Logger, o.Features, o.Prices, s.events)
	o.Metrics.views.Store(s.views)
	o.Metrics.setStore(o.Store)
	uo := upstreamOptions{
		DialTimeout: 10 * time.Second,
		MaxConns:    cfg.Limits.MaxConnsPerUpstream,
		Timeout:     cfg.Limits.UpstreamTimeout,
	}
	for p, base := range map[Provider]string{
		ProviderAnthropic: cfg.Upstreams.Anthropic,
		ProviderOpenAI:    cfg.Upstreams.OpenAI,
		ProviderGemini:    cfg.Upstreams.Gemini,
	} {
		u, err := newUpstream(p, base, uo)
		if err != nil {
			return nil, err
		}
		s.upstreams[p] = u
	}
	rt, err := newRouter(cfg, uo, o.Metrics)
	if err != nil {
		return nil, err
	}
	s.router = rt
	s.watcher = newDisconnectWatcher(func(route, phase string) {
		s.metrics.disconnects.WithLabelValues(route, phase).Inc()
	})
	s.console = console.New(console.Options{Store: o.Store, Authorized: s.adminAuthorized, Logger: o.Logger.Named("console")})
	s.recorder = newSessionRecorder(o.Store, o.Logger.Named("sessions"), o.Metrics, cfg.State.Redis.Timeout)
	handler := s.handle
	if cfg.Admin.Listen == "" {
		handler = s.handleWithAdmin
	}
	handler = s.screenRequest(handler)
	handler = s.bufferBody(handler)
	handler = recoverMiddleware(handler, s.log)
	if o.Features.runsHooks() {
		// Keep the hooks' deep request side off the connection goroutine,
		// which a stream then parks on for its whole life (idle_stack.go).
		handler = offStack(handler)
	}
	handler = s.forgetBodyRoute(handler)
	// ReduceMemoryUsage: a connection gives its 16 KB read buffer back once
	// the request is read (an open stream would keep it for its whole life)
	// and both buffers back between the requests of a keep-alive connection.
	// The write buffer is 4 KB: an open stream holds it for its whole life,
	// and the stream writer already coalesces events into chunks of up to
	// 4 KB (a larger write passes through bufio unbuffered). A JSON reply
	// of 4-16 KB now leaves in two writes instead of one. Not smaller: a
	// 1 KB buffer (with the stream writer framing every chunk after the
	// first itself) saved 3 KB per open stream, but every reply whose
	// headers and body pass 1 KB (the providers' headers alone are 1-2 KB)
	// then left in two writes: +12-15 µs per small JSON request
	// (BenchmarkProxyJSON/small, 2026-11-26).
	s.srv = &fasthttp.Server{
		Handler:                       handler,
		Name:                          "shepherd",
		MaxRequestBodySize:            cfg.Limits.MaxBodyBytes,
		ErrorHandler:                  s.handleServerError,
		NoDefaultServerHeader:         true,
		NoDefaultDate:                 true,
		NoDefaultContentType:          true,
		DisablePreParseMultipartForm:  true,
		ReduceMemoryUsage:             true, // see above
		ReadBufferSize:                16 << 10,
		WriteBufferSize:               4 << 10, // see above
		IdleTimeout:                   2 * time.Minute,
		ReadTimeout:                   cfg.Limits.HeaderTimeout, // the body's is set in HeaderReceived
		HeaderReceived:                s.headerReceived(cfg.Limits.BodyTimeout),
		CloseOnShutdown:               true,
		ConnState:                     s.connState,
		StreamRequestBody:             true, // request_body.go, cut_through.go
		KeepHijackedConns:             true, // a detached stream's connection outlives the hijack (stream_detach.go)
		DisableHeaderNamesNormalizing: false,
		// fasthttp's header errors quote the raw request (SecureErrorLogMessage
		// stays off): handleServerError reads the route from it, and the
		// logger masks every quoted byte before a line is written.
		Logger: logging.FastHTTP(o.Logger.Named("fasthttp")),
	}
	s.adminSrv = &fasthttp.Server{
		Handler:               recoverMiddleware(s.handleAdminListener, s.log),
		Name:                  "shepherd-admin",
		NoDefaultServerHeader: true,
		CloseOnShutdown:       true, // a browser's idle keep-alive connection (the console) must not hold Shutdown
		ReadTimeout:           30 * time.Second,
		Logger:                logging.FastHTTP(o.Logger.Named("fasthttp-admin")),
	}
	return s, nil
}

// Serve serves the proxy on ln until Shutdown. It returns nil after a
// graceful shutdown.
func (s *Server) Serve(ln net.Listener) error {
	ln = newResilientListener(ln, s.log, func() { s.metrics.acceptErrors.Inc() })
	if s.cfg.Limits.MaxConnsPerIP > 0 {
		ln = newPerIPListener(ln, s.cfg.Limits.MaxConnsPerIP)
	}
	s.track(ln)
	return s.srv.Serve(ln)
}

// ServeAdmin serves the admin endpoints on ln until Shutdown.
func (s *Server) ServeAdmin(ln net.Listener) error {
	s.track(ln)
	return s.adminSrv.Serve(ln)
}

func (s *Server) track(ln net.Listener) {
	s.mu.Lock()
	s.listeners = append(s.listeners, ln)
	s.mu.Unlock()
}

// ListenAndServe listens on the configured addresses (proxy and, if set,
// admin) and serves until Shutdown or a listener fails.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("proxy: listen %s: %w", s.cfg.Listen, err)
	}
	errc := make(chan error, 2)
	if s.cfg.Admin.Listen != "" {
		aln, err := net.Listen("tcp", s.cfg.Admin.Listen)
		if err != nil {
			ln.Close()
			return fmt.Errorf("proxy: listen admin %s: %w", s.cfg.Admin.Listen, err)
		}
		go func() { errc <- s.ServeAdmin(aln) }()
	}
	go func() { errc <- s.Serve(ln) }()
	return <-errc
}

// Shutdown stops accepting connections, lets open streams finish until ctx is
// done, then cuts the streams still open (each gets the API's stream error
// event), and flushes pending session writes.
func (s *Server) Shutdown(ctx context.Context) error {
	s.feeds.close() // open event feeds end, so no listener waits on them
	s.stopping.Store(true)
	done := make(chan error, 1)
	go func() { done <- s.srv.ShutdownWithContext(ctx) }()
	stopFresh := s.closeFreshWhileStopping()
	defer stopFresh()
	var err error
	finished := false
	select {
	case err = <-done:
		finished = true
		_ = s.detached.wait(ctx) // streams fasthttp no longer counts
	case <-ctx.Done():
	}
	if ctx.Err() != nil {
		n := s.streams.closeAll()
		s.log.Warn("shutdown grace expired; cutting open streams", zap.Int("streams", n))
		late, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if !finished {
			select {
			case err = <-done:
			case <-late.Done():
				err = ctx.Err()
			}
		}
		if s.detached.wait(late) != nil {
			s.detached.closeAll() // writers stuck on clients that do not read
		}
		cancel()
	}
	_ = s.adminSrv.ShutdownWithContext(ctx) // a browser's unused preconnection would hold Shutdown() for the read timeout
	s.watcher.close()
	s.recorder.close(2 * time.Second)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// connState is the proxy server's fasthttp ConnState hook, called at every
// transition of every connection (twice per request: it must stay cheap):
// the disconnect watcher drops a connection once it is closed or hijacked;
// a connection a detached stream handed back is no longer waiting for its
// first request.
func (s *Server) connState(c net.Conn, state fasthttp.ConnState) {
	if s.watcher != nil {
		s.watcher.connState(c, state)
	}
	s.detached.connState(c)
}

// closeFreshWhileStopping closes, every 100 ms until the returned stop is
// called, the connections detached streams handed back to fasthttp that
// wait for a request: what fasthttp's Shutdown does for its own idle
// connections.
func (s *Server) closeFreshWhileStopping() (stop func()) {
	quit := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			s.detached.closeFresh()
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(quit) }
}

// handleServerError renders errors fasthttp meets before the handler runs
// (oversized or unparsable requests) in the calling API's error shape.
func (s *Server) handleServerError(ctx *fasthttp.RequestCtx, err error) {
	s.refuseUnread(ctx, s.routeOfRefused(ctx, err), err)
}

// refuseUnread answers a request that could not be read (err, from
// fasthttp or the body's read) in rt's error shape, and counts it.
func (s *Server) refuseUnread(ctx *fasthttp.RequestCtx, rt route, err error) {
	status := writeError(ctx, rt.provider, refusedError(err))
	s.metrics.countRequest(rt.name, status)
}

// recoverMiddleware turns a panic in h into a 500 in a neutral error shape
// and a log line; fasthttp itself does not recover panics.
func recoverMiddleware(h fasthttp.RequestHandler, log *zap.Logger) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		defer func() {
			if r := recover(); r != nil {
				log.Error("panic in handler", zap.Any("panic", r), zap.ByteString("path", ctx.Path()))
				rt := classify(ctx.Method(), ctx.Path(), false, false)
				writeErrorStatus(ctx, rt.provider, fasthttp.StatusInternalServerError, "internal error in shepherd")
			}
		}()
		h(ctx)
	}
}
