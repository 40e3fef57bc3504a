package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/events/feed"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
)

// eventsFlushGrace bounds how long shutdown waits for the queued events to
// reach the store.
const eventsFlushGrace = 3 * time.Second

// newEvents builds the live feed: a publisher over the store's event log
// when events.enabled and the store keeps one, otherwise events.Nop. The
// returned close flushes what is queued (within eventsFlushGrace); call it
// after the server stopped and before the store closes.
func newEvents(cfg *config.Config, store state.Store, m *proxy.Metrics, log *zap.Logger) (events.Emitter, func(), error) {
	el, ok := store.(state.EventLog)
	if !cfg.Events.Enabled || !ok {
		if cfg.Events.Enabled {
			log.Warn("event feed off: the state store keeps no event log", zap.String("state", string(cfg.State.Backend)))
		}
		return events.Nop{}, func() {}, nil
	}
	p, err := feed.New(feed.Options{
		Log: el, Queue: cfg.Events.Queue, Metrics: m.Registry, Logger: log.Named("events"),
	})
	if err != nil {
		return nil, nil, err
	}
	return p, func() {
		ctx, cancel := context.WithTimeout(context.Background(), eventsFlushGrace)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			log.Warn("event feed: queued events not all written at shutdown", zap.Error(err))
		}
	}, nil
}
