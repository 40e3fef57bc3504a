// Command shepherd runs the proxy: it loads and validates the configuration,
// builds the logger, the state store and the hook chain, serves until SIGINT
// or SIGTERM, and shuts down gracefully.
//
// `shepherd edits list|show|revert` reads a session's edit journal from a
// running proxy's admin API and reverts an entry (edits.go, docs/revert.md).
//
// `shepherd healthcheck` exits 0 when a running proxy's /healthz (or
// /readyz with -ready) answers 200, 1 otherwise: the container image's
// HEALTHCHECK (healthcheck.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/logging"
	"github.com/shepherd-proxy/shepherd/pricing"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "edits" {
		// shepherd edits list|show|revert: a client of the admin API.
		if err := runEdits(context.Background(), os.Args[2:], os.Stdout, os.Stderr); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				os.Exit(0)
			}
			fmt.Fprintln(os.Stderr, "shepherd:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "healthcheck" {
		if err := runHealthcheck(context.Background(), os.Args[2:], os.Stderr); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				os.Exit(0)
			}
			fmt.Fprintln(os.Stderr, "shepherd:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "shepherd:", err)
		os.Exit(1)
	}
}

func run() error {
	configFile := flag.String("config", "", "YAML config file (see config.example.yaml)")
	listen := flag.String("listen", "", "proxy listen address (overrides the listen key)")
	flag.Parse()

	overrides := map[string]any{}
	if *listen != "" {
		overrides["listen"] = *listen
	}
	cfg, err := config.Load(config.LoadOptions{File: *configFile, Overrides: overrides})
	if err != nil {
		return err
	}
	log, err := newLogger(cfg.Log)
	if err != nil {
		return err
	}
	// Every line, shepherd's and its libraries', passes one redacting core.
	log = logging.Redacting(log)
	logging.RouteLibraries(log)
	for _, w := range cfg.Deprecations() {
		log.Warn(w)
	}
	defer func() { _ = log.Sync() }()

	metrics := proxy.NewMetrics()
	store, err := openStore(cfg, log)
	if err != nil {
		return err
	}
	defer store.Close()
	em, closeEvents, err := newEvents(cfg, store, metrics, log)
	if err != nil {
		return err
	}
	defer closeEvents() // after the server stopped, before the store closes

	journal, _ := store.(state.EditJournal)
	counters, _ := store.(state.Counters)
	features, err := proxy.BuildFeaturesWith(cfg, metrics, log, proxy.FeatureDeps{Events: em, Journal: journal, Counters: counters})
	if err != nil {
		return err
	}
	defer features.Close()

	prices, err := pricing.New(cfg.Pricing.Models)
	if err != nil {
		return err
	}
	tp, stopTracing, err := newTracing(cfg, log)
	if err != nil {
		return err
	}
	defer stopTracing() // after the server stopped: exports the spans still batched
	srv, err := proxy.New(proxy.Options{
		Config: cfg, Logger: log, Store: store, Metrics: metrics, Features: features, Prices: prices, Events: em,
		Tracing: tp,
	})
	if err != nil {
		return err
	}

	log.Info("shepherd starting", zap.String("listen", cfg.Listen), zap.String("admin", cfg.Admin.Listen),
		zap.String("state", string(cfg.State.Backend)), zap.Stringer("config", cfg.Redacted()))
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case err := <-errc:
		return err
	case s := <-sig:
		log.Info("shutting down", zap.String("signal", s.String()), zap.Duration("grace", cfg.Limits.ShutdownGrace))
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Limits.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	log.Info("stopped")
	return nil
}

// openStore opens the configured state store. Store errors are counted by the
// proxy at its call sites, so no OnError hook is wired here.
func openStore(cfg *config.Config, log *zap.Logger) (state.Store, error) {
	switch cfg.State.Backend {
	case config.BackendRedis:
		r := cfg.State.Redis
		return state.NewRedis(state.RedisOptions{
			URL: r.URL, Addrs: r.Addrs, MasterName: r.MasterName, Timeout: r.Timeout,
			KeyPrefix: r.KeyPrefix, TTL: cfg.State.TTL,
			PinnedSessions: r.PinnedSessions, PinnedMax: cfg.State.MaxSessions,
			EventsPerSession: cfg.Events.PerSession, EventsGlobal: cfg.Events.Global,
		})
	default:
		return state.NewMemory(state.MemoryOptions{MaxSessions: cfg.State.MaxSessions, TTL: cfg.State.TTL,
			EventsPerSession: cfg.Events.PerSession, EventsGlobal: cfg.Events.Global}), nil
	}
}

func newLogger(c config.Log) (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(c.Level)
	if err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	zc := zap.NewProductionConfig()
	if c.Format == "console" {
		zc = zap.NewDevelopmentConfig()
	}
	zc.Level = zap.NewAtomicLevelAt(level)
	zc.DisableStacktrace = true
	return zc.Build()
}
