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

func TestActivityOfContextFeatures(t *testing.T) {
	cases := []struct {
		ev   events.Event
		want string
	}{
		{events.Event{Type: events.ProseDetected, Data: map[string]any{"kind": "instead_of_tools", "words": float64(42), "nudged": true}},
			"prose instead of tools · 42 words · reminder sent next"},
		{events.Event{Type: events.ContextCompacted, Data: map[string]any{"epoch": float64(2), "results": float64(5),
			"kept_chars": float64(8000), "omitted_chars": float64(64000), "estimated_tokens_before": float64(60000),
			"estimated_tokens_after": float64(44000)}},
			"epoch 2 · 5 results compacted · 8,000 chars kept, 64,000 omitted · ~60,000 → ~44,000 tokens"},
		{events.Event{Type: events.HistoryGated, Data: map[string]any{"decision": "new_topic", "reason": "explicit_phrase", "dropped": float64(6)}},
			"new topic · explicit_phrase · 6 earlier messages left out"},
		{events.Event{Type: events.HistoryGated, Data: map[string]any{"decision": "follow_up", "reason": "pronoun"}},
			"follow up · pronoun"},
		{events.Event{Type: events.FormatApplied, Data: map[string]any{"rule": "summary"}}, "rule summary"},
		{events.Event{Type: events.BudgetReached, Data: map[string]any{"budget": "tool_calls", "tool": "Bash", "limit": float64(3), "spent": float64(3)}},
			"tool calls · Bash · spent 3 of 3"},
	}
	for _, c := range cases {
		if got := activityOf(c.ev).Summary; got != c.want {
			t.Errorf("%s: got %q, want %q", c.ev.Type, got, c.want)
		}
	}
}
