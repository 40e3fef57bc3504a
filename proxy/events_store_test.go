package proxy_test

import (
	"time"

	"github.com/shepherd-proxy/shepherd/state"
)

// newEventStore is an in-memory store with its event log.
func newEventStore() state.Store {
	return state.NewMemory(state.MemoryOptions{MaxSessions: 1000, TTL: time.Hour})
}
