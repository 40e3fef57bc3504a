package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEventsValidate(t *testing.T) {
	c := Defaults()
	require.NoError(t, c.Validate())
	require.Equal(t, Events{Enabled: true, Queue: 4096, PerSession: 500, Global: 5000,
		PollInterval: 500 * time.Millisecond, Heartbeat: 15 * time.Second}, c.Events)

	c.Events = Events{Queue: 0, PerSession: -1, Global: 2000000, PollInterval: time.Millisecond, Heartbeat: time.Hour}
	err := c.Validate()
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, []string{"events.queue", "events.per_session", "events.global", "events.poll_interval", "events.heartbeat"}, problemKeys(ve))
}
