package intents

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/hooks/intents/policy"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

const askYAML = `version: 1
current_intent_id: null
intents:
  - id: INT-001
    summary: "Fix the login bug"
    scope:
      allow_glob: ["src/**"]
      deny_glob: ["src/secrets/**"]
      ask_glob: ["src/db/migrations/**", "config/**"]
    constraints:
      disallow_tools: ["Bash"]
      disallow_patterns: ["rm\\s+-rf"]
      ask_tools: ["Deploy", "mcp__*"]
      ask_patterns: ["git\\s+push"]
    acceptance_criteria:
      - id: AC-1
        description: "login works"
`

func decisionOf(d []conv.CallDecision, index int) conv.CallDecision {
	for _, cd := range d {
		if cd.CallIndex == index {
			return cd
		}
	}
	return conv.CallDecision{CallIndex: index}
}

// Ask rules hold a call (conv.Hold with the reason and the rule); a
// refusing rule matching the same call wins.
func TestIntentsAskRules(t *testing.T) {
	p := mustPolicy(t, askYAML)
	in, _ := p.Intent("INT-001")
	require.Equal(t, []string{"Deploy", "mcp__*"}, in.AskTools)
	require.Equal(t, []string{`git\s+push`}, in.AskPatterns)
	require.Equal(t, []string{"src/db/migrations/**", "config/**"}, in.AskGlob)

	f := newIntentsFixture(t, p, func(o *Options) {
		sa, err := policy.ParseShellArgs([]string{"Sh:command"})
		require.NoError(t, err)
		o.ShellArgs, o.InferPaths = sa, true
	})
	d, s := decide(t, f.h, callWith(sessionWith("INT-001", 3)),
		conv.ToolCall{Name: "Deploy", Args: []byte(`{"env":"prod"}`)},                           // 0 ask_tools
		conv.ToolCall{Name: "mcp__github__merge", Args: []byte(`{}`)},                           // 1 ask_tools glob
		conv.ToolCall{Name: "Sh", Args: []byte(`{"command":"git push origin main"}`)},           // 2 ask_patterns
		conv.ToolCall{Name: "Write", Args: []byte(`{"file_path":"src/db/migrations/001.sql"}`)}, // 3 ask_glob in allow
		conv.ToolCall{Name: "Write", Args: []byte(`{"file_path":"config/app.yaml"}`)},           // 4 ask_glob outside allow
		conv.ToolCall{Name: "Write", Args: []byte(`{"file_path":"src/secrets/k.pem"}`)},         // 5 deny wins
		conv.ToolCall{Name: "Deploy", Args: []byte(`{"cmd":"rm -rf /"}`)},                       // 6 disallow_patterns wins over ask_tools
		conv.ToolCall{Name: "Sh", Args: []byte(`{"command":"echo x > config/a.yaml"}`)},         // 7 shell target in ask_glob
		conv.ToolCall{Name: "Write", Args: []byte(`{"file_path":"src/app.go"}`)},                // 8 allowed
		conv.ToolCall{Name: "Deploy", Args: []byte(`{"file_path":"docs/x.md"}`)},                // 9 out of scope refusal wins over ask
	)
	want := []struct {
		v    conv.Verdict
		rule string
		has  string
	}{
		{conv.Hold, RuleAskTools, `asks before the tool "Deploy" (ask_tools entry "Deploy")`},
		{conv.Hold, RuleAskTools, `ask_tools entry "mcp__*"`},
		{conv.Hold, RuleAskPatterns, `git\s+push`},
		{conv.Hold, RuleAskScope, `matches ask_glob "src/db/migrations/**"`},
		{conv.Hold, RuleAskScope, `matches ask_glob "config/**"`},
		{conv.Refuse, RuleScope, "deny_glob"},
		{conv.Refuse, RuleDisallowPatterns, "rm\\s+-rf"},
		{conv.Hold, RuleAskScope, `command writing "config/a.yaml"`},
		{conv.Pass, "", ""},
		{conv.Refuse, RuleScope, "docs/x.md"},
	}
	for i, w := range want {
		cd := decisionOf(d.Calls, i)
		require.Equal(t, w.v, cd.Verdict, "call %d: %+v", i, cd)
		require.Equal(t, w.rule, cd.Rule, "call %d", i)
		require.Contains(t, cd.Result, w.has, "call %d", i)
	}
	audit := slotOf(t, s).Audit
	require.Len(t, audit, len(want))
	require.Equal(t, DecisionHeld, audit[0].Decision)
	require.Equal(t, RuleAskTools, audit[0].Rule)
	require.Contains(t, audit[0].Reason, "Deploy")
	require.Equal(t, DecisionRefused, audit[5].Decision)
	require.Equal(t, DecisionAllowed, audit[8].Decision)

	// The model learns of the ask rules with the intent's context.
	xml := in.ContextXML()
	require.Contains(t, xml, "<ask_tool>Deploy</ask_tool>")
	require.Contains(t, xml, "<ask_glob>config/**</ask_glob>")
	require.Contains(t, xml, `<ask_pattern>git\s+push</ask_pattern>`)
}

// Ask rules are validated like their refusing counterparts.
func TestIntentsAskRulesValidated(t *testing.T) {
	_, err := policy.Parse([]byte(`version: 1
intents:
  - id: INT-001
    summary: s
    scope:
      ask_glob: ["/etc/**"]
    constraints:
      ask_tools: [""]
      ask_patterns: ["("]
`), "p.yaml")
	require.Error(t, err)
	msg := err.Error()
	require.Contains(t, msg, "scope.ask_glob[0]")
	require.Contains(t, msg, "constraints.ask_tools[0]: empty tool name")
	require.Contains(t, msg, "constraints.ask_patterns[0]: invalid regexp")
}

// Observe mode lets every call through, audits what enforce would have
// done, and reports it as call.refused with observed true; answers to
// select_active_intent stay as in enforce mode; a selection emits
// intent.selected.
func TestIntentsObserveMode(t *testing.T) {
	p := mustPolicy(t, askYAML)
	rec := &events.Recorder{}
	f := newIntentsFixture(t, p, func(o *Options) { o.Observe, o.Events = true, rec })
	call := callWith(sessionWith("", 3))
	call.SessionID, call.Tenant = "sess-1", "ten-1"
	d, s := decide(t, f.h, call,
		conv.ToolCall{Name: "Write", Args: []byte(`{"file_path":"src/a.go"}`)},   // 0 gatekeeper: would refuse
		conv.ToolCall{Name: IntentTool, Args: []byte(`{"intent_id":"INT-001"}`)}, // 1 claimed as in enforce
		conv.ToolCall{Name: "Bash", Args: []byte(`{"command":"ls"}`)},            // 2 disallow_tools: would refuse
		conv.ToolCall{Name: "Deploy", Args: []byte(`{}`)},                        // 3 ask: would ask
		conv.ToolCall{Name: IntentTool, Args: []byte(`{"intent_id":"INT-999"}`)}, // 4 refused as in enforce
		conv.ToolCall{Name: "Write", Args: []byte(`{"file_path":"src/ok.go"}`)},  // 5 allowed
	)
	require.Len(t, d.Calls, 2, "only the answers to select_active_intent: %+v", d.Calls)
	require.Equal(t, conv.Claim, decisionOf(d.Calls, 1).Verdict)
	require.Equal(t, conv.Refuse, decisionOf(d.Calls, 4).Verdict)

	audit := slotOf(t, s).Audit
	require.Equal(t, DecisionWouldRefuse, audit[0].Decision)
	require.Equal(t, RuleGatekeeper, audit[0].Rule)
	require.Equal(t, DecisionSelected, audit[1].Decision)
	require.Equal(t, DecisionWouldRefuse, audit[2].Decision)
	require.Equal(t, RuleDisallowTools, audit[2].Rule)
	require.Equal(t, DecisionWouldAsk, audit[3].Decision)
	require.Equal(t, DecisionRefused, audit[4].Decision)
	require.Equal(t, DecisionAllowed, audit[5].Decision)
	require.Equal(t, "INT-001", slotOf(t, s).Intent)

	var refused []events.Event
	var selected []events.Event
	for _, ev := range rec.All() {
		switch ev.Type {
		case events.CallRefused:
			refused = append(refused, ev)
		case events.IntentSelected:
			selected = append(selected, ev)
		}
	}
	require.Len(t, refused, 3)
	for _, ev := range refused {
		require.Equal(t, true, ev.Data["observed"])
		require.Equal(t, "sess-1", ev.Session)
		require.Equal(t, "ten-1", ev.Tenant)
	}
	require.Equal(t, "Write", refused[0].Data["tool"])
	require.Equal(t, RuleGatekeeper, refused[0].Data["rule"])
	require.Equal(t, false, refused[0].Data["ask"])
	require.Equal(t, true, refused[2].Data["ask"])
	require.Equal(t, RuleAskTools, refused[2].Data["rule"])
	require.Len(t, selected, 1)
	require.Equal(t, "INT-001", selected[0].Data["intent"])
	require.Equal(t, "Fix the login bug", selected[0].Data["description"])
	require.Equal(t, []string{"login works"}, selected[0].Data["criteria"])
}

// Enforce mode emits intent.selected too, and no observed refusals.
func TestIntentsSelectedEventEnforce(t *testing.T) {
	rec := &events.Recorder{}
	f := newIntentsFixture(t, mustPolicy(t, askYAML), func(o *Options) { o.Events = rec })
	decide(t, f.h, callWith(sessionWith("", 3)),
		conv.ToolCall{Name: IntentTool, Args: []byte(`{"intent_id":"INT-001"}`)},
		conv.ToolCall{Name: "Bash", Args: []byte(`{"command":"ls"}`)})
	require.Len(t, rec.All(), 1)
	require.Equal(t, events.IntentSelected, rec.All()[0].Type)
}

// The section validates mode and the approval timings.
func TestIntentsConfigHolds(t *testing.T) {
	var c Config
	c.SetDefaults()
	require.Empty(t, c.Validate())
	require.Equal(t, ModeEnforce, c.Mode)
	c.Mode, c.ApprovalTimeout, c.ApprovalPoll, c.KeepAlive = "shadow", 0, -1, 10
	keys := map[string]bool{}
	for _, p := range c.Validate() {
		keys[p.Key] = true
	}
	require.True(t, keys["intents.mode"])
	require.True(t, keys["intents.approval_timeout"])
	require.True(t, keys["intents.approval_poll"])
	require.True(t, keys["intents.keepalive"])
}

// A session that starts under the policy's current_intent_id reports it
// (intent.selected, starting true) on its first request only, so the
// console shows the intent and its criteria before any selection.
func TestIntentsStartingIntentAnnounced(t *testing.T) {
	rec := &events.Recorder{}
	yaml := strings.Replace(askYAML, "current_intent_id: null", "current_intent_id: INT-001", 1)
	f := newIntentsFixture(t, mustPolicy(t, yaml), func(o *Options) { o.Events = rec })
	req := &conv.Request{}
	for _, requests := range []int64{0, 1, 5} {
		_, _, err := f.h.OnRequest(context.Background(), &hooks.Call{Session: sessionWith("", requests), Request: req}, req)
		require.NoError(t, err)
	}
	require.Len(t, rec.All(), 1, "first request only")
	ev := rec.All()[0]
	require.Equal(t, events.IntentSelected, ev.Type)
	require.Equal(t, "INT-001", ev.Data["intent"])
	require.Equal(t, true, ev.Data["starting"])
	require.Equal(t, "Fix the login bug", ev.Data["description"])
	// A side request, or a session that selected already, reports nothing.
	_, _, err := f.h.OnRequest(context.Background(), &hooks.Call{Session: sessionWith("", 0), Request: req, Side: "json"}, req)
	require.NoError(t, err)
	_, _, err = f.h.OnRequest(context.Background(), &hooks.Call{Session: sessionWith("INT-001", 0), Request: req}, req)
	require.NoError(t, err)
	require.Len(t, rec.All(), 1)
}
