package intents

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/hooks/intents/policy"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

const intentsYAML = `version: 1
current_intent_id: null
intents:
  - id: INT-001
    summary: "Fix the login bug"
    scope:
      allow_glob: ["src/**", "tests/**"]
      deny_glob: ["src/secrets/**"]
    constraints:
      disallow_tools: ["Bash"]
      disallow_patterns: ["rm\\s+-rf"]
    acceptance_criteria:
      - id: AC-1
        description: "login works"
        status: pending
  - id: INT-002
    summary: "Write the docs"
    scope:
      allow_glob: ["docs/**"]
`

func mustPolicy(t *testing.T, yaml string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(yaml), "active_intents.yaml")
	require.NoError(t, err)
	return p
}

type intentsFixture struct {
	h         *Hook
	decisions []AuditEntry
}

func newIntentsFixture(t *testing.T, p *policy.Policy, mod func(*Options)) *intentsFixture {
	t.Helper()
	pa, err := policy.ParsePathArgs([]string{"Write:file_path", "Edit:file_path", "apply_patch:patch(input)"})
	require.NoError(t, err)
	f := &intentsFixture{}
	cfg := Options{
		Policy:        func() *policy.Policy { return p },
		Root:          "/work/app",
		AlwaysAllowed: []string{"Read", "Grep"},
		Exempt:        []string{"create_new_topic"},
		PathArgs:      pa,
		Now:           func() time.Time { return time.Unix(1700000000, 0).UTC() },
		OnDecision:    func(_ *hooks.Call, e AuditEntry) { f.decisions = append(f.decisions, e) },
	}
	if mod != nil {
		mod(&cfg)
	}
	f.h = New(cfg)
	return f
}

// sessionWith is a session of requests turns that selected intent.
func sessionWith(intent string, requests int64) *state.Session {
	s := &state.Session{Requests: requests}
	s.SetSlot(Name, &State{Intent: intent})
	return s
}

// slotOf is the intents slot of s (an empty one when it has none).
func slotOf(t testing.TB, s *state.Session) *State {
	t.Helper()
	st, err := Of(s)
	require.NoError(t, err)
	if st == nil {
		return &State{}
	}
	return st
}

func callWith(sess *state.Session) *hooks.Call {
	return &hooks.Call{Session: sess, Request: &conv.Request{}}
}

func decide(t *testing.T, h *Hook, call *hooks.Call, calls ...conv.ToolCall) (hooks.ReplyDecision, *state.Session) {
	t.Helper()
	for i := range calls {
		calls[i].Index = i
		if calls[i].ID == "" {
			calls[i].ID = "call_" + string(rune('a'+i))
		}
	}
	d, err := h.OnReply(context.Background(), call, &conv.Reply{ToolCalls: calls})
	require.NoError(t, err)
	s := call.Session.Clone()
	for _, fx := range d.Effects {
		fx(s)
	}
	return d, s
}

func verdictOf(d hooks.ReplyDecision, index int) (conv.Verdict, string) {
	for _, cd := range d.Calls {
		if cd.CallIndex == index {
			return cd.Verdict, cd.Result
		}
	}
	return conv.Pass, ""
}

func TestIntentsCheckOrder(t *testing.T) {
	p := mustPolicy(t, intentsYAML)
	cases := []struct {
		name    string
		intent  string
		state   bool // StateUnavailable
		tool    string
		args    string
		verdict conv.Verdict
		rule    string
		result  string // substring of the result ("" for conv.Pass)
	}{
		{"gatekeeper refuses a write with no intent", "", false, "Write", `{"file_path":"src/a.go"}`, conv.Refuse, RuleGatekeeper, GatekeeperMessage},
		{"always-allowed bypasses the gatekeeper", "", false, "Read", `{"file_path":"/etc/passwd"}`, conv.Pass, RuleAlwaysAllowed, ""},
		{"unknown tool is gated too", "", false, "mcp__db__query", `{}`, conv.Refuse, RuleGatekeeper, GatekeeperMessage},
		{"disallow_tools before patterns", "INT-001", false, "Bash", `{"command":"rm -rf /"}`, conv.Refuse, RuleDisallowTools, `disallows the tool "Bash"`},
		{"patterns before scope", "INT-001", false, "Write", `{"file_path":"docs/x.md","content":"rm  -rf build"}`, conv.Refuse, RuleDisallowPatterns, `"rm\s+-rf"`},
		{"in scope passes", "INT-001", false, "Write", `{"file_path":"src/auth/login.go","content":"x"}`, conv.Pass, RuleChecksPassed, ""},
		{"absolute path inside the root", "INT-001", false, "Edit", `{"file_path":"/work/app/tests/a_test.go"}`, conv.Pass, RuleChecksPassed, ""},
		{"out of allow_glob", "INT-001", false, "Write", `{"file_path":"docs/x.md"}`, conv.Refuse, RuleScope, `"docs/x.md" is outside the scope of intent INT-001`},
		{"deny_glob wins over allow_glob", "INT-001", false, "Write", `{"file_path":"src/secrets/key.pem"}`, conv.Refuse, RuleScope, "deny_glob"},
		{"deny_glob ignores case", "INT-001", false, "Write", `{"file_path":"src/SECRETS/key.pem"}`, conv.Refuse, RuleScope, "deny_glob"},
		{"escape with ..", "INT-001", false, "Write", `{"file_path":"src/../../etc/passwd"}`, conv.Refuse, RuleScope, "outside the workspace"},
		{"absolute path outside the root", "INT-001", false, "Write", `{"file_path":"/work/application/src/a.go"}`, conv.Refuse, RuleScope, "outside the workspace"},
		{"patch touching one file out of scope", "INT-001", false, "apply_patch",
			`{"input":"*** Begin Patch\n*** Update File: src/a.go\n@@\n-x\n+y\n*** Add File: README.md\n+hi\n*** End Patch"}`, conv.Refuse, RuleScope, `"README.md"`},
		{"unparsable arguments of a path tool", "INT-001", false, "Write", `{"file_path":`, conv.Refuse, RuleScope, "could not tell which files"},
		{"tool without path args is not scope-checked", "INT-001", false, "Grep", `{"pattern":"x","path":"/etc"}`, conv.Pass, RuleChecksPassed, ""},
		{"intent removed from the policy", "INT-009", false, "Write", `{"file_path":"src/a.go"}`, conv.Refuse, RuleGatekeeper, "INT-009 is no longer defined"},
		{"state unavailable fails closed", "", true, "Write", `{"file_path":"src/a.go"}`, conv.Refuse, RuleStateUnavailable, "cannot read this session's state"},
		{"state unavailable still allows read-only tools", "", true, "Read", `{"file_path":"src/a.go"}`, conv.Pass, RuleAlwaysAllowed, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newIntentsFixture(t, p, nil)
			call := callWith(sessionWith(tc.intent, 3))
			call.StateUnavailable = tc.state
			d, s := decide(t, f.h, call, conv.ToolCall{Name: tc.tool, Args: []byte(tc.args)})
			v, res := verdictOf(d, 0)
			require.Equal(t, tc.verdict, v, res)
			if tc.verdict == conv.Pass {
				require.Empty(t, res)
			} else {
				require.Contains(t, res, tc.result)
			}
			if tc.rule == RuleGatekeeper && tc.intent == "" {
				require.Equal(t, GatekeeperMessage, res, "the gatekeeper text is the documented text")
			}
			require.Len(t, f.decisions, 1)
			e := f.decisions[0]
			require.Equal(t, tc.rule, e.Rule)
			require.Equal(t, tc.tool, e.Tool)
			require.Equal(t, "call_a", e.CallID)
			if tc.verdict == conv.Refuse {
				require.Equal(t, DecisionRefused, e.Decision)
				require.Equal(t, res, e.Reason)
			} else {
				require.Equal(t, DecisionAllowed, e.Decision)
			}
			require.Equal(t, []AuditEntry{e}, slotOf(t, s).Audit)
		})
	}
}

func TestIntentsWithoutPolicy(t *testing.T) {
	for _, open := range []bool{false, true} {
		f := newIntentsFixture(t, nil, func(c *Options) {
			c.FailOpen = open
			c.PolicyProblem = func() string { return "active_intents.yaml:3: version must be 1" }
		})
		call := callWith(&state.Session{Requests: 1})
		d, _ := decide(t, f.h, call,
			conv.ToolCall{Name: "Write", Args: []byte(`{"file_path":"src/a.go"}`)},
			conv.ToolCall{Name: "Read", Args: []byte(`{"file_path":"src/a.go"}`)},
			conv.ToolCall{Name: IntentTool, Args: []byte(`{"intent_id":"INT-001"}`)})
		v, res := verdictOf(d, 0)
		if open {
			require.Equal(t, conv.Pass, v)
			require.Equal(t, RuleFailOpen, f.decisions[0].Rule)
		} else {
			require.Equal(t, conv.Refuse, v)
			require.Contains(t, res, "the intents policy is unavailable (active_intents.yaml:3: version must be 1)")
			require.Equal(t, RulePolicyUnavailable, f.decisions[0].Rule)
		}
		v, _ = verdictOf(d, 1)
		require.Equal(t, conv.Pass, v)
		v, res = verdictOf(d, 2)
		require.Equal(t, conv.Refuse, v, "no intent can be selected without a policy")
		require.Contains(t, res, "No intents policy is loaded")
	}
}

func TestSelectActiveIntent(t *testing.T) {
	p := mustPolicy(t, intentsYAML)
	cases := []struct {
		name     string
		args     string
		verdict  conv.Verdict
		decision string
		result   string
		intent   string // the session's intent afterwards
	}{
		{"valid id", `{"intent_id":"INT-001"}`, conv.Claim, DecisionSelected, `<intent_context intent_id="INT-001">`, "INT-001"},
		{"blanks trimmed", `{"intent_id":" INT-002 "}`, conv.Claim, DecisionSelected, `<intent_context intent_id="INT-002">`, "INT-002"},
		{"unknown id names the available ones", `{"intent_id":"INT-404"}`, conv.Refuse, DecisionRefused, `Unknown intent ID "INT-404". Available intents: INT-001, INT-002.`, ""},
		{"bad format", `{"intent_id":"login"}`, conv.Refuse, DecisionRefused, `"login" is not a valid intent ID (format INT-XXX`, ""},
		{"wrong type", `{"intent_id":7}`, conv.Refuse, DecisionRefused, "intent_id is number, not a string", ""},
		{"not an object", `[1]`, conv.Refuse, DecisionRefused, "not a JSON object", ""},
		{"no id lists the intents", `{}`, conv.Claim, DecisionListed, "- INT-001: Fix the login bug\n- INT-002: Write the docs", ""},
		{"empty arguments list the intents", ``, conv.Claim, DecisionListed, "- INT-002: Write the docs", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newIntentsFixture(t, p, nil)
			d, s := decide(t, f.h, callWith(&state.Session{Requests: 2}), conv.ToolCall{Name: IntentTool, Args: []byte(tc.args)})
			v, res := verdictOf(d, 0)
			require.Equal(t, tc.verdict, v)
			require.Contains(t, res, tc.result)
			require.Equal(t, tc.intent, slotOf(t, s).Intent)
			require.Equal(t, tc.decision, f.decisions[0].Decision)
			require.Equal(t, RuleSelectIntent, f.decisions[0].Rule)
		})
	}
	t.Run("context block", func(t *testing.T) {
		f := newIntentsFixture(t, p, nil)
		d, _ := decide(t, f.h, callWith(&state.Session{}), conv.ToolCall{Name: IntentTool, Args: []byte(`{"intent_id":"INT-001"}`)})
		_, res := verdictOf(d, 0)
		in, _ := p.Intent("INT-001")
		require.Equal(t, in.ContextXML(), res)
		for _, part := range []string{"<scope>", "<constraints>", "<acceptance_criteria>", "Fix the login bug", "src/secrets/**"} {
			require.Contains(t, res, part)
		}
	})
}

func TestIntentSelectionGovernsLaterCallsOfTheReply(t *testing.T) {
	f := newIntentsFixture(t, mustPolicy(t, intentsYAML), nil)
	d, s := decide(t, f.h, callWith(&state.Session{Requests: 1}),
		conv.ToolCall{Name: "Write", Args: []byte(`{"file_path":"src/a.go"}`)},
		conv.ToolCall{Name: IntentTool, Args: []byte(`{"intent_id":"INT-001"}`)},
		conv.ToolCall{Name: "Write", Args: []byte(`{"file_path":"src/a.go"}`)},
		conv.ToolCall{Name: "Write", Args: []byte(`{"file_path":"docs/a.md"}`)},
	)
	v0, r0 := verdictOf(d, 0)
	require.Equal(t, conv.Refuse, v0)
	require.Equal(t, GatekeeperMessage, r0)
	v1, _ := verdictOf(d, 1)
	require.Equal(t, conv.Claim, v1)
	v2, _ := verdictOf(d, 2)
	require.Equal(t, conv.Pass, v2)
	v3, _ := verdictOf(d, 3)
	require.Equal(t, conv.Refuse, v3)
	require.Equal(t, "INT-001", slotOf(t, s).Intent)
	require.Len(t, slotOf(t, s).Audit, 4)
	require.Equal(t, []string{"", "INT-001", "INT-001", "INT-001"},
		[]string{slotOf(t, s).Audit[0].Intent, slotOf(t, s).Audit[1].Intent, slotOf(t, s).Audit[2].Intent, slotOf(t, s).Audit[3].Intent})
}

func TestIntentsStartingIntentAndReminder(t *testing.T) {
	yaml := strings.Replace(intentsYAML, "current_intent_id: null", "current_intent_id: INT-002", 1)
	p := mustPolicy(t, yaml)
	f := newIntentsFixture(t, p, nil)

	// A new session starts under current_intent_id.
	newSess := callWith(&state.Session{})
	e, resp, err := f.h.OnRequest(context.Background(), newSess, newSess.Request)
	require.NoError(t, err)
	require.Nil(t, resp)
	require.Equal(t, []string{"[Active Intent: INT-002 — Write the docs]\nStay within this intent's scope and constraints; call select_active_intent to switch intents."}, e.AppendUserText)
	d, s := decide(t, f.h, newSess, conv.ToolCall{Name: "Write", Args: []byte(`{"file_path":"docs/guide.md"}`)})
	v, _ := verdictOf(d, 0)
	require.Equal(t, conv.Pass, v)
	require.Equal(t, "INT-002", slotOf(t, s).Intent, "the starting intent is saved with the first reply")

	// An older session that never selected one has none.
	old := callWith(&state.Session{Requests: 4})
	e, _, _ = f.h.OnRequest(context.Background(), old, old.Request)
	require.True(t, strings.HasPrefix(e.AppendUserText[0], "[Active Intent: none]"))

	// The static injections are byte-identical whatever the session.
	e2, _, _ := f.h.OnRequest(context.Background(), newSess, newSess.Request)
	require.Equal(t, e.AddTools, e2.AddTools)
	require.Equal(t, []string{IntentRule}, e.AppendSystem)
	require.Equal(t, e.AppendSystem, e2.AppendSystem)
	require.Equal(t, IntentTool, e.AddTools[0].Name)
}

func TestIntentsExemptAndAgentOwned(t *testing.T) {
	p := mustPolicy(t, intentsYAML)
	f := newIntentsFixture(t, p, nil)
	d, s := decide(t, f.h, callWith(&state.Session{Requests: 1}), conv.ToolCall{Name: "create_new_topic", Args: []byte(`{"title":"x"}`)})
	require.Empty(t, d.Calls)
	require.Empty(t, slotOf(t, s).Audit)
	require.Empty(t, f.decisions)

	// An agent that declares select_active_intent answers it itself:
	// nothing is injected, the call passes, the selection is tracked.
	call := &hooks.Call{Session: &state.Session{Requests: 1}, Request: &conv.Request{Tools: []conv.ToolDef{{Name: IntentTool}}}}
	e, _, _ := f.h.OnRequest(context.Background(), call, call.Request)
	require.True(t, e.Empty())
	d, s = decide(t, f.h, call,
		conv.ToolCall{Name: IntentTool, Args: []byte(`{"intent_id":"INT-002"}`)},
		conv.ToolCall{Name: "Write", Args: []byte(`{"file_path":"src/a.go"}`)})
	v, _ := verdictOf(d, 0)
	require.Equal(t, conv.Pass, v)
	require.Equal(t, "INT-002", slotOf(t, s).Intent)
	v, res := verdictOf(d, 1)
	require.Equal(t, conv.Refuse, v, "checks still apply")
	require.Contains(t, res, "INT-002")
}

func TestIntentsAuditIsBounded(t *testing.T) {
	f := newIntentsFixture(t, mustPolicy(t, intentsYAML), func(c *Options) { c.MaxAudit = 3 })
	sess := sessionWith("INT-001", 1)
	for i := range 5 {
		_, next := decide(t, f.h, callWith(sess), conv.ToolCall{Name: "Grep", ID: "g" + string(rune('0'+i)), Args: []byte(`{}`)})
		sess = next
	}
	require.Len(t, slotOf(t, sess).Audit, 3)
	require.Equal(t, "g4", slotOf(t, sess).Audit[2].CallID)
	require.Equal(t, "g2", slotOf(t, sess).Audit[0].CallID)
}
