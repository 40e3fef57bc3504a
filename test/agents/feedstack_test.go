package agents

import (
	"testing"
	"time"

	"github.com/shepherd-proxy/shepherd/config"
)

// feedStackOptions tune a console stack.
type feedStackOptions struct {
	// Policy is written to .orchestration/active_intents.yaml (intents on).
	Policy string
	// ApprovalTimeout bounds a held call's wait.
	ApprovalTimeout time.Duration
	// KeepAlive is intents.keepalive (0: 250ms).
	KeepAlive time.Duration
}

// newFeedStack is newStack wired like cmd/shepherd wires the console: the
// live event feed, topics and intents on (o.Policy), with short feed, approval
// poll and keepalive intervals so held calls are decided and kept alive
// quickly. Admin endpoints share the proxy listener.
func newFeedStack(t *testing.T, d driver, o feedStackOptions) *stack {
	t.Helper()
	return newStack(t, d, stackOptions{Topics: true, Policy: o.Policy, Feed: true, Configure: func(cfg *config.Config) {
		cfg.Events.Enabled = true
		cfg.Events.PollInterval = 50 * time.Millisecond
		cfg.Events.Heartbeat = time.Second
		cfg.Intents.ApprovalTimeout = o.ApprovalTimeout
		cfg.Intents.ApprovalPoll = 50 * time.Millisecond
		cfg.Intents.KeepAlive = 250 * time.Millisecond
		if o.KeepAlive > 0 {
			cfg.Intents.KeepAlive = o.KeepAlive
		}
	}})
}
