package config

import (
	"time"

	"github.com/shepherd-proxy/shepherd/hooks/registry"
)

// Defaults returns the configuration used when no file, environment variable
// or flag sets a key. It is the single source of the defaults stated in the
// field comments and in config.example.yaml (a test keeps the three in step).
// The result passes Validate.
func Defaults() Config {
	return Config{
		Listen: "127.0.0.1:8787",
		Upstreams: Upstreams{
			Anthropic: "https://api.anthropic.com",
			OpenAI:    "https://api.openai.com",
			Gemini:    "https://generativelanguage.googleapis.com",
		},
		State: State{
			Backend:     BackendMemory,
			TTL:         24 * time.Hour,
			MaxSessions: 10000,
			Redis: Redis{
				URL:        "",
				Addrs:      nil,
				MasterName: "",
				Timeout:    200 * time.Millisecond,
				KeyPrefix:  "shepherd",
			},
		},
		Limits: Limits{
			MaxBodyBytes:        32 << 20,
			UpstreamTimeout:     10 * time.Minute,
			StreamIdleTimeout:   5 * time.Minute,
			ShutdownGrace:       30 * time.Second,
			DetachStreams:       true,
			MaxConnsPerUpstream: 1024,
			ViewCacheBytes:      64 << 20,
			HeaderTimeout:       15 * time.Second,
			BodyTimeout:         5 * time.Minute,
			MaxConnsPerIP:       0,
			CutThroughBytes:     64 << 10,
		},
		Admin: Admin{
			Listen: "127.0.0.1:8788",
			Token:  "",
		},
		Log: Log{
			Level:  "info",
			Format: "json",
		},
		Session: Session{
			Header: "X-Session-Id",
		},
		Sections: registry.Defaults(),
		Features: Features{
			SideRequests: SideRequestsPass,
		},
		Turns: Turns{
			MaxFollowups:     4,
			MaxRefusalRounds: 4,
		},
		Events:  defaultEvents(),
		Tracing: defaultTracing(),
	}
}
