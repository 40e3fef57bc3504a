package config

import "time"

// Events configures the live event feed (docs/events.md): what the proxy
// did in each session, published off the request path, kept per session in
// the state store and served as SSE on the admin endpoints.
type Events struct {
	// Enabled: key events.enabled; default true. Off, nothing is published
	// and the feed endpoints answer 404. The feed also stays off when the
	// state store keeps no event log.
	Enabled bool `mapstructure:"enabled"`
	// Queue: key events.queue; events waiting to be written to the store;
	// a full queue drops its oldest event (shepherd_events_dropped_total).
	// Default 4096, at most 1048576.
	Queue int `mapstructure:"queue"`
	// PerSession: key events.per_session; the newest events kept per
	// session. Default 500, at most 100000.
	PerSession int `mapstructure:"per_session"`
	// Global: key events.global; the newest events kept for the feed of
	// every session. Default 5000, at most 1000000.
	Global int `mapstructure:"global"`
	// PollInterval: key events.poll_interval; how often an open feed reads
	// the store for events another replica wrote (this replica's own wake
	// it at once). Default 500ms, between 10ms and 1m.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// Heartbeat: key events.heartbeat; the longest an open feed stays
	// silent: an SSE comment line keeps proxies from closing it. Default
	// 15s, between 100ms and 10m.
	Heartbeat time.Duration `mapstructure:"heartbeat"`
}

// defaultEvents is the events section's defaults.
func defaultEvents() Events {
	return Events{
		Enabled:      true,
		Queue:        4096,
		PerSession:   500,
		Global:       5000,
		PollInterval: 500 * time.Millisecond,
		Heartbeat:    15 * time.Second,
	}
}

func (e *Events) validate(p *problems) {
	inRange := func(key string, n, lo, hi int) {
		if n < lo || n > hi {
			p.add(key, "%d is out of range: must be between %d and %d", n, lo, hi)
		}
	}
	inRange("events.queue", e.Queue, 1, 1<<20)
	inRange("events.per_session", e.PerSession, 1, 100000)
	inRange("events.global", e.Global, 1, 1000000)
	durRange := func(key string, d, lo, hi time.Duration) {
		if d < lo || d > hi {
			p.add(key, "%v is out of range: must be between %v and %v", d, lo, hi)
		}
	}
	durRange("events.poll_interval", e.PollInterval, 10*time.Millisecond, time.Minute)
	durRange("events.heartbeat", e.Heartbeat, 100*time.Millisecond, 10*time.Minute)
}
