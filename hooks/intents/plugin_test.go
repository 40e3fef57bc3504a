package intents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/hooks/intents/policy"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// TestSlotVersions: the slot reads a version-0 slot (the legacy record's
// top-level "intent" and "audit"), its own version after a round trip
// through the store's encoding, and refuses an unknown version.
func TestSlotVersions(t *testing.T) {
	legacy := &state.Session{}
	legacy.SetSlot(Name, &state.RawSlot{V: 0, Data: json.RawMessage(
		`{"intent":"INT-001","audit":[{"at":"2025-03-04T05:06:07Z","tool":"Write","call_id":"c1","decision":"refused","rule":"scope","reason":"no","intent":"INT-001","topic":"Fix"}]}`)})
	got, err := Of(legacy)
	require.NoError(t, err)
	require.Equal(t, "INT-001", got.Intent)
	require.Equal(t, AuditEntry{At: got.Audit[0].At, Tool: "Write", CallID: "c1", Decision: "refused", Rule: "scope", Reason: "no", Intent: "INT-001", Topic: "Fix"}, got.Audit[0])
	require.Equal(t, "2025-03-04T05:06:07Z", got.Audit[0].At.Format("2006-01-02T15:04:05Z07:00"))

	cur := &state.Session{}
	cur.SetSlot(Name, got)
	b, err := json.Marshal(cur)
	require.NoError(t, err)
	var back state.Session
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, "INT-001", back.Note(Name))
	again, err := Of(&back)
	require.NoError(t, err)
	require.Equal(t, got, again)

	future := &state.Session{}
	future.SetSlot(Name, &state.RawSlot{V: SlotVersion + 1})
	_, err = Of(future)
	require.ErrorContains(t, err, "newer than this build reads")
}

// TestUnreadableSlotFailsClosed: a slot this build cannot read leaves the
// active intent unknown, which governance treats as unavailable state
// (closed: refused), and the effects leave the slot as it is.
func TestUnreadableSlotFailsClosed(t *testing.T) {
	f := newIntentsFixture(t, mustPolicy(t, intentsYAML), nil)
	sess := &state.Session{Requests: 2}
	future := &state.RawSlot{V: SlotVersion + 1, Data: json.RawMessage(`{}`)}
	sess.SetSlot(Name, future)
	d, s := decide(t, f.h, callWith(sess), conv.ToolCall{Name: "Write", Args: []byte(`{"file_path":"src/a.go"}`)})
	v, _ := verdictOf(d, 0)
	require.Equal(t, conv.Refuse, v)
	require.Equal(t, RuleStateUnavailable, f.decisions[0].Rule)
	require.Equal(t, future, s.Slots[Name])
}

// TestOnOutcomeCountsAllowedCalls: the outcome phase reports the fate of
// each call governance let through, and nothing for refused or claimed
// calls, exempt tools or select_active_intent.
func TestOnOutcomeCountsAllowedCalls(t *testing.T) {
	var fates []string
	f := newIntentsFixture(t, mustPolicy(t, intentsYAML), func(o *Options) { o.OnOutcome = func(f string) { fates = append(fates, f) } })
	out := &conv.TurnOutcome{Calls: []conv.Outcome{
		{Call: conv.ToolCall{Name: "Read"}, Fate: conv.FateDelivered},
		{Call: conv.ToolCall{Name: "Write"}, Fate: conv.FateRefused, Hook: Name},
		{Call: conv.ToolCall{Name: "Edit"}, Fate: conv.FateUndelivered},
		{Call: conv.ToolCall{Name: "Write"}, Fate: conv.FateDropped, Hook: "recovery"},
		{Call: conv.ToolCall{Name: "create_new_topic"}, Fate: conv.FateClaimed, Hook: "topics"},
		{Call: conv.ToolCall{Name: "create_new_topic"}, Fate: conv.FateDelivered},
		{Call: conv.ToolCall{Name: IntentTool}, Fate: conv.FateClaimed, Hook: Name},
	}}
	require.NoError(t, f.h.OnOutcome(t.Context(), callWith(&state.Session{}), out))
	require.Equal(t, []string{"delivered", "undelivered", "dropped"}, fates)
	require.NoError(t, f.h.OnOutcome(t.Context(), callWith(&state.Session{}), nil))
}

const validPolicy = "version: 1\ncurrent_intent_id: null\nintents:\n  - id: INT-001\n    summary: Fix\n    scope:\n      allow_glob: [\"src/**\"]\n"

// TestProvisionPerSource: one hook per distinct policy source, shared by
// the APIs that use it; on auto an API whose file is missing gets none;
// the watchers are reported and closed; the metrics are the plug-in's own.
func TestProvisionPerSource(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	file := filepath.Join(root, ".orchestration", "active_intents.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, []byte(validPolicy), 0o644))

	var c Config
	c.SetDefaults()
	c.WorkspaceRoot = root
	c.Routes.Gemini = Route{WorkspaceRoot: other} // no policy file there
	c.Routes.OpenAIChat = Route{File: file}
	reg := prometheus.NewRegistry()
	p, err := c.Provision(hooks.Env{Metrics: reg, Log: zap.NewNop(), WorkDir: "/", Owned: []string{"create_new_topic", IntentTool}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })

	hs := map[string]hooks.Hook{}
	for _, key := range []string{"anthropic", "openai_chat", "openai_responses", "gemini"} {
		h, err := p.Hook(hooks.API{Key: key})
		require.NoError(t, err)
		hs[key] = h
	}
	require.Nil(t, hs["gemini"], "auto: no policy file, no governance")
	require.NotNil(t, hs["anthropic"])
	require.Same(t, hs["anthropic"], hs["openai_chat"], "the same source shares one hook")
	require.Same(t, hs["anthropic"], hs["openai_responses"])
	h := hs["anthropic"].(*Hook)
	require.True(t, h.FailsClosed())
	require.True(t, h.exempt["create_new_topic"], "other plug-ins' tools are left alone")
	require.False(t, h.exempt[IntentTool])

	name, detail, degraded := p.(hooks.Reporter).Report()
	require.Equal(t, "policies", name)
	require.Len(t, detail, 1)
	require.Equal(t, file, detail.([]policy.Status)[0].File)
	require.False(t, degraded)

	_, err = h.OnReply(t.Context(), callWith(sessionWith("", 1)), &conv.Reply{ToolCalls: []conv.ToolCall{{Name: "Write", Args: []byte(`{}`)}}})
	require.NoError(t, err)
	names := map[string]bool{}
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	require.True(t, names["shepherd_intent_decisions_total"])
	require.True(t, names["shepherd_intents_policy_loads_total"])
	require.True(t, names["shepherd_intents_policy_valid"])

	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "Close is idempotent")

	c.Enabled = hooks.SwitchOff
	off, err := c.Provision(hooks.Env{Metrics: prometheus.NewRegistry(), Log: zap.NewNop()})
	require.NoError(t, err)
	require.Nil(t, off)
	require.Nil(t, c.OwnedTools())
}

// TestProvisionBadRoot: with intents on, a workspace root that is not a
// directory is a start-up error naming the API.
func TestProvisionBadRoot(t *testing.T) {
	var c Config
	c.SetDefaults()
	c.Enabled = hooks.SwitchOn
	c.WorkspaceRoot = filepath.Join(t.TempDir(), "missing")
	p, err := c.Provision(hooks.Env{Metrics: prometheus.NewRegistry(), Log: zap.NewNop()})
	require.NoError(t, err)
	_, err = p.Hook(hooks.API{Key: "anthropic"})
	require.ErrorContains(t, err, "(for anthropic) is not a directory")
	require.NoError(t, p.Close())
}
