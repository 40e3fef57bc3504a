package proxy

import (
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/pricing"
	"github.com/shepherd-proxy/shepherd/proxy/turn"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// newEngine builds the turn engine from the server's dependencies, once.
func newEngine(cfg *config.Config, store state.Store, m *Metrics, log *zap.Logger, f *Features, prices *pricing.Table, ev events.Emitter) *turn.Engine {
	return turn.New(turn.Options{
		Store:        store,
		Metrics:      m,
		Log:          log,
		Now:          time.Now,
		StoreTimeout: storeTimeout(cfg),
		Limits: turn.Limits{
			MaxFollowups:     cfg.Turns.MaxFollowups,
			MaxRefusalRounds: cfg.Turns.MaxRefusalRounds,
		},
		Recovery:   f.recovers(),
		Prices:     prices,
		SessionFor: fingerprintSessionID,
		Approvals:  approvalsOf(store),
		Holds:      turn.Holds(cfg.Intents.Holds()),
		Events:     ev,
		// The history memo has a budget of its own, half the view cache's,
		// and the splice memo one sixteenth (limits.view_cache_bytes, 0
		// turns them all off).
		HistoryMemoBytes: cfg.Limits.ViewCacheBytes / 2,
		SpliceMemoBytes:  cfg.Limits.ViewCacheBytes / 16,
	})
}

// approvalsOf is the store's approvals (nil when it keeps none: held calls
// are then refused).
func approvalsOf(store state.Store) state.Approvals {
	a, _ := store.(state.Approvals)
	return a
}

// storeTimeout bounds one store call of a turn.
func storeTimeout(cfg *config.Config) time.Duration {
	if d := cfg.State.Redis.Timeout; d > 0 && cfg.State.Backend == config.BackendRedis {
		return 5 * d
	}
	return time.Second
}

// beginTurn hands a model request to the turn engine. It returns the turn
// (nil when the request passes through) and the body to send upstream, or
// short=true when a hook answered the request (the answer is written).
func (s *Server) beginTurn(ctx *fasthttp.RequestCtx, x *exchange, view *conv.Request, body []byte) (t *turn.Turn, out []byte, short bool) {
	api := x.route.api
	cc, _ := rewrite.Continuer(x.codec)
	t, st := s.engine.Begin(ctx, turn.Request{
		Call:        x.call,
		Chain:       s.features.chain(api),
		FailsClosed: s.features.failsClosed(api),
		Codec:       x.codec,
		TurnCodec:   x.codec,
		Continuer:   cc,
		View:        view,
		Body:        body,
		Opening:     x.sessionSource == sourceOpening,
		Trace:       x.turnTrace(),
	})
	if st.Short != nil {
		if x.trace != nil {
			x.trace.traceShort()
		}
		status := st.Short.Status
		if status == 0 {
			status = fasthttp.StatusBadRequest
		}
		writeErrorStatus(ctx, x.route.provider, status, st.Short.Message)
		for k, v := range st.Short.Headers {
			ctx.Response.Header.Set(k, v)
		}
		s.finish(ctx, x, status)
		return nil, nil, true
	}
	return t, st.Body, false
}

// runJSONTurn serves a complete (non-streamed) reply through the turn
// engine and writes the agent's copy to the client.
func (s *Server) runJSONTurn(ctx *fasthttp.RequestCtx, x *exchange, t *turn.Turn) error {
	tio := &x.turnIO
	tio.json = turnJSON{ctx: ctx, resp: x.upResp, watch: x.watch}
	tio.sender = upstreamSender{s: s, x: x, tmpl: &ctx.Request}
	return t.Run(ctx, &tio.json, &tio.sender)
}
