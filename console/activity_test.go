package console

import (
	"testing"

	"github.com/shepherd-proxy/shepherd/events"
)

func TestActivityOfRouteAndEdits(t *testing.T) {
	cases := []struct {
		ev   events.Event
		want string
	}{
		{events.Event{Type: events.RouteSelected, Data: map[string]any{"rule": "apply", "requested_model": "claude-opus-4-5",
			"model": "claude-haiku-4-5", "upstream": "fast"}}, "rule apply · claude-opus-4-5 → claude-haiku-4-5 · via fast"},
		{events.Event{Type: events.RouteSelected, Data: map[string]any{"rule": "pin", "requested_model": "m", "model": "m",
			"upstream": "anthropic", "sticky": true}}, "rule pin · m · via anthropic · kept from the session's start"},
		{events.Event{Type: events.RouteSelected, Data: map[string]any{"rule": "no-opus", "refused": true}}, "rule no-opus · refused"},
		{events.Event{Type: events.EditStarted, Data: map[string]any{"tool": "Write", "operation": "create", "path": "/w/a.go"}},
			"Write · create · /w/a.go"},
	}
	for _, c := range cases {
		if got := activityOf(c.ev).Summary; got != c.want {
			t.Errorf("%s: got %q, want %q", c.ev.Type, got, c.want)
		}
	}
}
