package proxy

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/shepherd-proxy/shepherd/proxy/turn"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/state"
)

// Metrics holds the proxy's Prometheus collectors on a private registry
// (never the global one), so several servers can live in one process
// (tests). The features register their own collectors on the same registry
// when they are provisioned (BuildFeatures).
type Metrics struct {
	Registry *prometheus.Registry

	// views is the view cache of the server these metrics belong to (set
	// by New; the latest server's when several share the metrics).
	views atomic.Pointer[rewrite.ViewCache]
	// pinned is the store of that server when it keeps pinned sessions
	// (state.PinnedReporter), set by New like views.
	pinned atomic.Pointer[pinnedStore]

	requests       *prometheus.CounterVec
	upstreamWait   *prometheus.HistogramVec
	overhead       *prometheus.HistogramVec
	streamDuration *prometheus.HistogramVec
	streamsOpen    prometheus.Gauge
	storeErrors    *prometheus.CounterVec
	hookErrors     *prometheus.CounterVec
	upstreamErrors *prometheus.CounterVec
	clientAborts   *prometheus.CounterVec
	// disconnects counts clients found gone, by route and phase.
	disconnects *prometheus.CounterVec
	ledger      *prometheus.CounterVec
	// userTextEdits: the ledger replay's user-text edits, from the splice
	// memo or made (turn.SpliceMetrics).
	userTextEdits *prometheus.CounterVec
	answered      prometheus.Counter
	followups     *prometheus.CounterVec

	acceptErrors     prometheus.Counter
	truncations      *prometheus.CounterVec
	recoveries       *prometheus.CounterVec
	recoveryAttempts *prometheus.CounterVec
	recoveryAdded    *prometheus.HistogramVec

	sideRequests *prometheus.CounterVec
	cutThrough   *prometheus.CounterVec
	// prefixBreaks counts turns whose conversation did not extend the
	// previous request's, by cause (proxy/turn/prefix.go).
	prefixBreaks *prometheus.CounterVec
	// usage counts tokens and cost by route and model (metrics_usage.go).
	usage *usageCounters

	// reqCounters caches the counter of each (route, status) pair so the hot
	// path does not format labels per request.
	reqCounters sync.Map // key routeStatus → prometheus.Counter
}

type routeStatus struct {
	route  string
	status int
}

// NewMetrics registers shepherd's collectors (and the Go and process
// collectors) on a new registry.
func NewMetrics() *Metrics {
	r := prometheus.NewRegistry()
	fast := []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1}
	slow := prometheus.ExponentialBuckets(0.01, 2.5, 12) // 10ms … ~10min
	m := &Metrics{
		Registry: r,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_requests_total", Help: "Requests by route and final HTTP status.",
		}, []string{"route", "status"}),
		upstreamWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shepherd_upstream_duration_seconds", Help: "Time from sending a request upstream to its response headers.", Buckets: slow,
		}, []string{"route"}),
		overhead: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shepherd_overhead_seconds", Help: "Time spent inside shepherd per request, excluding waiting for the upstream.", Buckets: fast,
		}, []string{"route"}),
		streamDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shepherd_stream_duration_seconds", Help: "Duration of streamed replies, from response headers to the last byte.", Buckets: slow,
		}, []string{"route"}),
		streamsOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shepherd_streams_open", Help: "Streams currently being forwarded.",
		}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_store_errors_total", Help: "State store errors by operation.",
		}, []string{"op"}),
		hookErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_hook_errors_total", Help: "Hook failures (the request went on without the hook).",
		}, []string{"hook"}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_upstream_errors_total", Help: "Upstream failures by route and kind (timeout, unreachable, broken).",
		}, []string{"route", "kind"}),
		clientAborts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_client_aborts_total", Help: "Streams the client left early; the upstream request was cancelled.",
		}, []string{"route"}),
		disconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_client_disconnects_total", Help: "Clients that closed their connection before their reply was complete, by route and phase (waiting_upstream, reading_reply, streaming); the upstream request was cancelled.",
		}, []string{"route", "phase"}),
		ledger: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_ledger_entries_total", Help: "Ledger entries replayed into requests (applied), not found in the conversation (missed), or of a record version this build cannot read (unreadable).",
		}, []string{"result"}),
		userTextEdits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_ledger_user_text_edits_total", Help: "User texts the ledger replay put into earlier turns: taken from the edit the session's previous request made (memo), or made again (made).",
		}, []string{"source"}),
		answered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shepherd_tool_calls_answered_total", Help: "Tool calls shepherd answered itself (claimed or refused); the agent never saw them.",
		}),
		followups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_followups_total", Help: "Follow-up requests the turn engine sent upstream.",
		}, []string{"route"}),
		acceptErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shepherd_accept_errors_total", Help: "Failed accepts of client connections that shepherd retried (out of file descriptors or socket memory).",
		}),
		truncations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_truncations_total", Help: "Upstream replies cut by the output limit (max_tokens) or the context window (context_window, never continued).",
		}, []string{"route", "stop"}),
		recoveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_recoveries_total", Help: "Turns truncation recovery continued, by result: recovered (the agent got a complete reply), exhausted (still cut after the last attempt), failed (a continuation request failed).",
		}, []string{"route", "result"}),
		recoveryAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_recovery_attempts_total", Help: "Continuation requests sent upstream by truncation recovery.",
		}, []string{"route"}),
		recoveryAdded: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shepherd_recovery_added_seconds", Help: "Latency truncation recovery added to a turn: from the first cut reply to the end of the last continuation.", Buckets: slow,
		}, []string{"route"}),
		sideRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_side_requests_total",
			Help: "Side requests (no tools, tool_choice none, JSON output) passed upstream untouched, by route and kind.",
		}, []string{"route", "kind"}),
		cutThrough: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_cut_through_requests_total",
			Help: "Requests whose body went upstream while it arrived (limits.cut_through_bytes), by route and result: forwarded (whole), refused (the body failed its checks; the upstream never got it whole), incomplete (the client did not send it all), client_left (it left before the reply), upstream_failed.",
		}, []string{"route", "result"}),
		prefixBreaks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shepherd_prefix_breaks_total",
			Help: "Turns whose conversation sent upstream did not extend the session's previous request's (a prompt-cache miss from that point), by cause: client (the agent changed its history), compaction, gating (shepherd's context features changed it by design), proxy (unexplained: a bug).",
		}, []string{"cause"}),
	}
	for _, cause := range []string{turn.CauseClient, turn.CauseCompaction, turn.CauseGating, turn.CauseProxy} {
		m.prefixBreaks.WithLabelValues(cause) // every cause reads 0 until it happens
	}
	r.MustRegister(m.prefixBreaks, m.acceptErrors, m.truncations, m.recoveries, m.recoveryAttempts, m.recoveryAdded, m.ledger, m.userTextEdits, m.answered, m.followups, m.requests, m.upstreamWait, m.overhead, m.streamDuration, m.streamsOpen,
		m.storeErrors, m.hookErrors, m.upstreamErrors, m.clientAborts, m.disconnects, m.sideRequests, m.cutThrough,
		viewCacheLookups("hit", func() uint64 { h, _ := m.views.Load().Stats(); return h }),
		viewCacheLookups("miss", func() uint64 { _, n := m.views.Load().Stats(); return n }),
		indexMemoBodies("whole", func(w, _, _ uint64) uint64 { return w }, &m.views),
		indexMemoBodies("resumed", func(_, r, _ uint64) uint64 { return r }, &m.views),
		indexMemoBodies("resumed_tail", func(_, _, t uint64) uint64 { return t }, &m.views),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "shepherd_index_memo_prefetched_bodies_total",
			Help: "Request bodies of 64 KB or more compared with an earlier body in the index memo while they arrived, instead of after their last byte.",
		}, func() float64 { return float64(m.views.Load().Prefetched()) }),
		pinnedLookups("hit", func(s state.PinnedStats) int64 { return s.Hits }, &m.pinned),
		pinnedLookups("miss", func(s state.PinnedStats) int64 { return s.Misses }, &m.pinned),
		pinnedLookups("stale", func(s state.PinnedStats) int64 { return s.Stale }, &m.pinned),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.usage = newUsageCounters(r)
	return m
}

// countRequest counts one finished request.
func (m *Metrics) countRequest(route string, status int) {
	k := routeStatus{route, status}
	if c, ok := m.reqCounters.Load(k); ok {
		c.(prometheus.Counter).Inc()
		return
	}
	c := m.requests.WithLabelValues(route, strconv.Itoa(status))
	m.reqCounters.Store(k, c)
	c.Inc()
}

// StoreError counts a state-store failure for op.
func (m *Metrics) StoreError(op string) { m.storeErrors.WithLabelValues(op).Inc() }

func (m *Metrics) observeUpstream(route string, d time.Duration) {
	m.upstreamWait.WithLabelValues(route).Observe(d.Seconds())
}

// PrefixBreak implements turn.PrefixMetrics.
func (m *Metrics) PrefixBreak(_, cause string) { m.prefixBreaks.WithLabelValues(cause).Inc() }

func (m *Metrics) observeOverhead(route string, d time.Duration) {
	m.overhead.WithLabelValues(route).Observe(d.Seconds())
}

// pinnedStore is a store that keeps pinned sessions.
type pinnedStore struct{ r state.PinnedReporter }

// setStore makes the pinned-session metrics read st's counts, when st keeps
// pinned sessions.
func (m *Metrics) setStore(st state.Store) {
	if r, ok := st.(state.PinnedReporter); ok {
		if _, on := r.PinnedStats(); on {
			m.pinned.Store(&pinnedStore{r})
		}
	}
}

// pinnedLookups exports one of the pinned sessions' counts (0 while the
// store keeps none).
func pinnedLookups(result string, read func(state.PinnedStats) int64, src *atomic.Pointer[pinnedStore]) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "shepherd_store_pinned_total",
		Help: "With state.redis.pinned_sessions: session loads answered from this process's copy (hit) or from Redis (miss), " +
			"and saves that found the session written by another process since (stale: that request was rewritten from an older copy).",
		ConstLabels: prometheus.Labels{"result": result},
	}, func() float64 {
		p := src.Load()
		if p == nil {
			return 0
		}
		s, _ := p.r.PinnedStats()
		return float64(read(s))
	})
}

// indexMemoBodies exports one result of the index memo's counts
// (rewrite.ViewCache.BodyStats of the server's cache) as
// shepherd_index_memo_bodies_total{result}.
func indexMemoBodies(result string, pick func(whole, resumed, resumedTail uint64) uint64, views *atomic.Pointer[rewrite.ViewCache]) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name:        "shepherd_index_memo_bodies_total",
		Help:        "Request bodies of 8 KB or more validated through the index memo: whole, resumed (validated from where they differ from an earlier body), or resumed_tail (resumed, and the members after the conversation taken from the earlier body's index: unchanged bytes).",
		ConstLabels: prometheus.Labels{"result": result},
	}, func() float64 { return float64(pick(views.Load().BodyStats())) })
}

// viewCacheLookups exports the view cache's counts (rewrite.ViewCache.Stats
// of the server's cache, Metrics.views) as
// shepherd_view_cache_lookups_total{result}.
func viewCacheLookups(result string, read func() uint64) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name:        "shepherd_view_cache_lookups_total",
		Help:        "Conversation messages looked up in the view cache while parsing requests: hit (parsed before, not parsed again) or miss.",
		ConstLabels: prometheus.Labels{"result": result},
	}, func() float64 { return float64(read()) })
}
