package workload

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestBodies(t *testing.T) {
	for _, b := range All() {
		var v struct {
			Model    string            `json:"model"`
			Stream   bool              `json:"stream"`
			Messages []json.RawMessage `json:"messages"`
			Tools    []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(b.JSON, &v); err != nil {
			t.Fatalf("%s: invalid JSON: %v", b.Name, err)
		}
		if v.Model != Model || v.Stream != b.Stream || len(v.Messages) == 0 {
			t.Errorf("%s: model %q stream %v messages %d", b.Name, v.Model, v.Stream, len(v.Messages))
		}
		t.Logf("%s: %d bytes", b.Name, len(b.JSON))
	}
	agent := AnthropicAgent(AgentTurns, false)
	if n := len(agent); n < 45<<10 || n > 55<<10 {
		t.Errorf("agent body is %d bytes, want about 50 KB", n)
	}
	var v struct {
		Tools    []json.RawMessage `json:"tools"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(agent, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Tools) != 12 || len(v.Messages) != 1+2*AgentTurns {
		t.Errorf("agent body has %d tools and %d messages", len(v.Tools), len(v.Messages))
	}
	if !bytes.Equal(agent, AnthropicAgent(AgentTurns, false)) {
		t.Error("agent body is not deterministic")
	}
}
