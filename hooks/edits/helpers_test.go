package edits

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

var testNow = time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)

// rig is a hook over a journal, with its metrics and events.
type rig struct {
	h   *Hook
	j   state.EditJournal
	reg *prometheus.Registry
	m   *metrics
	ev  *events.Recorder
}

func newRig(t *testing.T, j state.EditJournal, tune ...func(*Options)) *rig {
	t.Helper()
	r := &rig{j: j, reg: prometheus.NewRegistry(), m: newMetrics(), ev: &events.Recorder{}}
	require.NoError(t, r.m.register(r.reg))
	o := Options{Journal: j, Events: r.ev, Metrics: r.m, Now: func() time.Time { return testNow }, MaxContentBytes: -1}
	for _, f := range tune {
		f(&o)
	}
	r.h = New(o)
	t.Cleanup(func() { _ = r.h.Close() })
	return r
}

// outcome runs OnOutcome for a turn on msgs whose calls had these fates,
// and waits for the journal writer.
func (r *rig) outcome(t *testing.T, call *hooks.Call, outs ...conv.Outcome) {
	t.Helper()
	require.NoError(t, r.h.OnOutcome(t.Context(), call, &conv.TurnOutcome{Calls: outs}))
	r.h.Flush()
}

func (r *rig) edits(t *testing.T, path string) []state.EditRecord {
	t.Helper()
	recs, err := r.j.Edits(context.Background(), testKey, path)
	require.NoError(t, err)
	return recs
}

func (r *rig) count(tool, op, status string) float64 {
	return counter(r.m.edits.WithLabelValues(tool, op, status))
}

var testKey = state.Key{Tenant: "tenant", Session: "s1"}

// session is a session whose topics and intents slots note chapter and
// intent.
func session(chapter, intent string) *state.Session {
	s := &state.Session{ID: testKey.Session, Tenant: testKey.Tenant}
	if chapter != "" {
		s.SetSlot(chapterSlot, &state.RawSlot{V: 1, Data: []byte(`{}`), Noted: chapter})
	}
	if intent != "" {
		s.SetSlot(intentSlot, &state.RawSlot{V: 1, Data: []byte(`{}`), Noted: intent})
	}
	return s
}

// callOn is a hooks.Call of the test session on a request with msgs.
func callOn(sess *state.Session, msgs ...conv.Message) *hooks.Call {
	return &hooks.Call{Route: "messages", RequestID: "req1", SessionID: testKey.Session, Tenant: testKey.Tenant,
		Request: &conv.Request{Messages: msgs}, Session: sess}
}

func args(kv ...any) []byte {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return b
}

func user(text string) conv.Message {
	return conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{{Kind: conv.BlockText, Text: text}}}
}

// assistantCall is an assistant message with one tool call.
func assistantCall(id, name string, a []byte) conv.Message {
	return conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{{Kind: conv.BlockToolCall, ToolCallID: id, ToolName: name, Args: a}}}
}

// result is a user message with one tool result.
func result(id, name, text string, isErr bool) conv.Message {
	return conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{{Kind: conv.BlockToolResult, ToolCallID: id, ToolName: name, Text: text, IsError: isErr}}}
}

// readResult is Claude Code's Read output of content: numbered lines.
func readResult(content string) string {
	var out string
	n := 0
	line := ""
	for _, r := range content {
		line += string(r)
		if r == '\n' {
			n++
			out += padNum(n) + "\t" + line
			line = ""
		}
	}
	if line != "" {
		n++
		out += padNum(n) + "\t" + line
	}
	return out
}

func padNum(n int) string {
	s := "      " + itoa(n)
	return s[len(s)-6:]
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func delivered(id, name string, a []byte) conv.Outcome {
	return conv.Outcome{Call: conv.ToolCall{ID: id, Name: name, Args: a}, Fate: conv.FateDelivered}
}

func sp(s string) *string { return &s }

// counter reads a counter's value.
func counter(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}
