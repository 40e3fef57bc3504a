// Package intents is intent governance (docs/features.md): the
// select_active_intent tool, the gatekeeper, and scope and constraint
// checks of every tool call against a watched policy file (package policy;
// the files shell commands write come from package shell). The active
// intent and the audit trail live in the session's "intents" slot.
package intents

import (
	"context"
	"path"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/hooks/intents/policy"
	"github.com/shepherd-proxy/shepherd/hooks/intents/shell"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// Intent governance texts (docs/features.md).
const (
	// IntentTool is the tool the model calls to select its active intent.
	IntentTool = "select_active_intent"
	// GatekeeperMessage is the documented refusal of a call made with no
	// intent selected.
	GatekeeperMessage = "No active intent selected. You must call select_active_intent with a valid intent ID (INT-XXX) before using other tools."
	// IntentRule is the system-prompt rule injected with the tool.
	IntentRule = "Intent-first rule: before any file-modifying or constrained action, you must call " +
		"select_active_intent with a valid intent ID (INT-XXX) from the project's intents policy, and then " +
		"stay within that intent's scope and constraints. Tool calls made without an active intent, or " +
		"outside its scope or constraints, are refused and you are told why. Call select_active_intent " +
		"without an intent_id to list the available intents."
	intentToolDescription = "Select the active intent (the task you are working on) from the project's intents policy. " +
		"Required, with a valid intent ID of the form INT-XXX, before any file-modifying or constrained action. " +
		"Returns the intent's scope, constraints and acceptance criteria as an <intent_context> block. " +
		"Call it without intent_id to list the available intents."
)

// Audit decisions.
const (
	DecisionAllowed  = "allowed"
	DecisionRefused  = "refused"
	DecisionSelected = "selected" // select_active_intent set the intent
	DecisionListed   = "listed"   // select_active_intent without an id
	// DecisionHeld: an ask rule matched; the turn engine holds the call
	// until a person approves or denies it (its final fate is in the turn's
	// outcome and the call.approved / call.denied events).
	DecisionHeld = "held"
	// DecisionWouldRefuse and DecisionWouldAsk: observe mode let through a
	// call enforce mode would have refused or held.
	DecisionWouldRefuse = "would_refuse"
	DecisionWouldAsk    = "would_ask"
)

// Audit rules: the check that decided. They are metric label values.
const (
	RuleAlwaysAllowed     = "always_allowed"
	RuleChecksPassed      = "checks_passed"
	RuleGatekeeper        = "gatekeeper"
	RuleDisallowTools     = "disallow_tools"
	RuleDisallowPatterns  = "disallow_patterns"
	RuleScope             = "scope"
	RuleUnparsedCommand   = "unparsed_command"
	RulePolicyUnavailable = "policy_unavailable"
	RuleStateUnavailable  = "state_unavailable"
	RuleFailOpen          = "fail_open"
	RuleSelectIntent      = "select_intent"
	// The ask rules: a call they match is held for a person's approval.
	RuleAskTools    = "ask_tools"
	RuleAskPatterns = "ask_patterns"
	RuleAskScope    = "ask_glob"
)

// Options configure the hook (Config.Provision builds them from the
// configuration section and a policy source).
type Options struct {
	// Policy returns the current good policy, or nil when none could ever be
	// loaded. It is called once per request and once per reply.
	Policy func() *policy.Policy
	// PolicyProblem describes why Policy returns nil (for the refusal text);
	// optional.
	PolicyProblem func() string
	// Root is the absolute workspace root paths are normalised against.
	Root string
	// AlwaysAllowed tools bypass the gatekeeper.
	AlwaysAllowed []string
	// Exempt tools are owned by other hooks (create_new_topic): Intents
	// neither checks nor audits their calls.
	Exempt []string
	// PathArgs says which arguments are file paths; nil checks no paths.
	PathArgs *policy.PathArgs
	// ShellArgs says which tools run shell commands; the files those
	// commands write (shell.Analyze) are scope-checked. nil checks none.
	ShellArgs *policy.ShellArgs
	// AllowUnparsed lets a shell command through when the files it writes
	// cannot all be known; otherwise it is refused while an intent is
	// active.
	AllowUnparsed bool
	// InferPaths scope-checks tools listed in neither AlwaysAllowed,
	// PathArgs nor ShellArgs on the arguments that look like file paths
	// (policy.InferPaths).
	InferPaths bool
	// FailOpen lets calls through when no policy is loaded or the session
	// state is unavailable; otherwise they are refused (fail closed).
	FailOpen bool
	// MaxAudit bounds the audit trail kept per session (oldest dropped);
	// default 500.
	MaxAudit int
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// OnDecision, when set, is called once per decision (logs, metrics). It
	// must be safe for concurrent use.
	OnDecision func(call *hooks.Call, e AuditEntry)
	// Observe is shadow mode (intents.mode observe): every call that would
	// be refused or held is let through, audited as would_refuse or
	// would_ask and reported as a call.refused event with observed true.
	// Answers to select_active_intent are given as in enforce mode.
	Observe bool
	// Events is the live feed decisions are reported to (intent.selected,
	// observed refusals); nil reports nothing.
	Events events.Emitter
	// OnOutcome, when set, is called once per tool call the hook allowed,
	// with its final fate (delivered, undelivered, dropped), in the outcome
	// phase. It must be safe for concurrent use.
	OnOutcome func(fate string)
}

// Hook is intent governance (docs/features.md): it offers the select_active_intent tool
// and the intent-first rule, names the active intent in the per-turn
// reminder, answers select_active_intent itself, and checks every other tool
// call of a reply, in order: gatekeeper, disallow_tools, disallow_patterns,
// file scope. A refused call is answered to the model as an error result
// with the reason; the agent never sees it. A call only an ask rule matches
// (ask_tools, ask_patterns, ask_glob) is held (conv.Hold): the turn engine
// waits for a person's approval (docs/approvals.md). In observe mode every
// call passes and what enforce would do is audited and reported. Every
// decision is audited in the session.
//
// Hook keeps no state of its own: the session's slot (State) carries the
// active intent and the audit trail; the policy comes from Options.Policy.
// It is safe for concurrent use.
type Hook struct {
	cfg     Options
	spec    conv.ToolSpec
	allowed map[string]bool
	exempt  map[string]bool
}

var (
	_ hooks.RequestHook = (*Hook)(nil)
	_ hooks.ReplyHook   = (*Hook)(nil)
	_ hooks.OutcomeHook = (*Hook)(nil)
	_ hooks.FailClosed  = (*Hook)(nil)
)

// New builds the hook. The tool definition and rule are rendered once, so
// they are byte-identical on every request.
func New(cfg Options) *Hook {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxAudit <= 0 {
		cfg.MaxAudit = 500
	}
	if cfg.Policy == nil {
		cfg.Policy = func() *policy.Policy { return nil }
	}
	if cfg.Events == nil {
		cfg.Events = events.Nop{}
	}
	h := &Hook{cfg: cfg, allowed: set(cfg.AlwaysAllowed), exempt: set(cfg.Exempt)}
	h.spec = conv.ToolSpec{
		Name:        IntentTool,
		Description: intentToolDescription,
		Parameters: []byte(`{"type":"object","properties":{"intent_id":{"type":"string",` +
			`"description":"The intent to work under, of the form INT-XXX (e.g. INT-001). Omit it to list the available intents."}}}`),
	}
	return h
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Name implements Hook.
func (h *Hook) Name() string { return Name }

// FailsClosed implements hooks.FailClosed: with on_error closed the chain
// runs even when the session state cannot be read, and refuses calls.
func (h *Hook) FailsClosed() bool { return !h.cfg.FailOpen }

// OnRequest injects the tool and the rule (static) and the reminder naming
// the active intent (dynamic, at the end of the newest user turn). When the
// agent declares select_active_intent itself, nothing is injected: the agent
// answers it, and Intents tracks valid selections and still checks calls.
func (h *Hook) OnRequest(_ context.Context, call *hooks.Call, req *conv.Request) (conv.RequestEdits, *hooks.Response, error) {
	if call.Side != "" {
		return conv.RequestEdits{}, nil, nil
	}
	p := h.cfg.Policy()
	h.announceStartingIntent(call, p)
	if req.HasTool(IntentTool) {
		return conv.RequestEdits{}, nil, nil
	}
	reminder := "[Active Intent: unknown — shepherd cannot read this session's state]"
	if st, err := stateOf(call.Session); !call.StateUnavailable && err == nil {
		reminder = h.Reminder(p, activeIntent(call.Session, st, p))
	}
	return conv.RequestEdits{
		AddTools:       []conv.ToolSpec{h.spec},
		AppendSystem:   []string{IntentRule},
		AppendUserText: []string{reminder},
	}, nil, nil
}

// Reminder renders the per-turn reminder for the active intent id ("" for
// none) under policy p (nil when unavailable).
func (h *Hook) Reminder(p *policy.Policy, id string) string {
	if id != "" && p != nil {
		if in, ok := p.Intent(id); ok {
			return "[Active Intent: " + in.ID + " — " + in.Summary + "]\n" +
				"Stay within this intent's scope and constraints; call select_active_intent to switch intents."
		}
	}
	if p == nil {
		return "[Active Intent: none — the intents policy is unavailable]"
	}
	return "[Active Intent: none]\n" +
		"Call select_active_intent with a valid intent ID (INT-XXX) before any file-modifying or constrained action."
}

// activeIntent is the session's intent: the one it selected (in st, its
// slot), or for a new session the policy's current_intent_id.
func activeIntent(sess *state.Session, st *State, p *policy.Policy) string {
	if sess == nil {
		return ""
	}
	if st.Active() != "" {
		return st.Active()
	}
	if sess.Requests == 0 && p != nil {
		return p.CurrentIntentID
	}
	return ""
}

// OnReply answers select_active_intent calls and checks every other call,
// in reply order: a successful selection governs the calls after it in the
// same reply.
func (h *Hook) OnReply(_ context.Context, call *hooks.Call, reply *conv.Reply) (hooks.ReplyDecision, error) {
	p := h.cfg.Policy()
	agentOwns := call.Request != nil && call.Request.HasTool(IntentTool)
	now := h.cfg.Now()
	// The active topic, as the topics feature notes it in its slot ("" when
	// topics is off): audit entries name it.
	topic := call.Session.Note("topics")
	st, err := stateOf(call.Session)
	if err != nil {
		// A slot this build cannot read: the active intent is unknown,
		// as when the state store is down.
		c := *call
		c.StateUnavailable = true
		call = &c
	}
	cur := activeIntent(call.Session, st, p)
	start := ""
	if call.Session != nil && st.Active() == "" && cur != "" && call.Side == "" && err == nil {
		start = cur // a new session's starting intent, saved below
	}
	selected := ""
	var d hooks.ReplyDecision
	var audit []AuditEntry
	for _, c := range reply.ToolCalls {
		if h.exempt[c.Name] {
			continue
		}
		e := AuditEntry{At: now, Tool: c.Name, CallID: c.ID, Topic: topic}
		var verdict conv.Verdict
		var result string
		if c.Name == IntentTool {
			var id string
			verdict, id, result = h.selectIntent(p, c.Args)
			e.Rule = RuleSelectIntent
			switch {
			case id != "":
				e.Decision, cur, selected = DecisionSelected, id, id
				h.selectedEvent(call, p, id, now, false)
			case verdict == conv.Claim:
				e.Decision = DecisionListed
			default:
				e.Decision, e.Reason = DecisionRefused, result
			}
			if agentOwns {
				verdict = conv.Pass // the agent answers its own tool
			}
		} else {
			verdict, e.Rule, result = h.check(call, p, cur, c)
			e.Decision = DecisionAllowed
			switch verdict {
			case conv.Refuse:
				e.Decision, e.Reason = DecisionRefused, result
			case conv.Hold:
				e.Decision, e.Reason = DecisionHeld, result
			}
			if h.cfg.Observe && verdict != conv.Pass {
				e.Decision = DecisionWouldRefuse
				if verdict == conv.Hold {
					e.Decision = DecisionWouldAsk
				}
				h.observedEvent(call, c, e, cur, now)
				verdict = conv.Pass
			}
		}
		e.Intent = cur
		if verdict != conv.Pass {
			d.Calls = append(d.Calls, conv.CallDecision{CallIndex: c.Index, Verdict: verdict, Result: result, Rule: e.Rule})
		}
		audit = append(audit, e)
		if h.cfg.OnDecision != nil {
			h.cfg.OnDecision(call, e)
		}
	}
	if len(audit) > 0 || start != "" {
		maxAudit := h.cfg.MaxAudit
		d.Effects = append(d.Effects, func(sess *state.Session) {
			s, err := state.SlotForUpdate(sess, Name, decodeSlot)
			if err != nil {
				return // a slot this build cannot read is left as it is
			}
			if s.Intent == "" && start != "" {
				s.Intent = start
			}
			if selected != "" {
				s.Intent = selected
			}
			if s.appendStoredAudit(audit, maxAudit) {
				return
			}
			s.Audit = append(s.Audit, audit...)
			if over := len(s.Audit) - maxAudit; over > 0 {
				s.Audit = append(s.Audit[:0:0], s.Audit[over:]...)
			}
		})
	}
	return d, nil
}

// selectIntent answers one select_active_intent call. It returns Claim with
// the intent's context (and id set) on success, Claim with the list of
// intents when no id was given, and Refuse with a reason otherwise.
func (h *Hook) selectIntent(p *policy.Policy, args []byte) (v conv.Verdict, id, result string) {
	if p == nil {
		return conv.Refuse, "", "No intents policy is loaded" + h.problem() + ", so no intent can be selected."
	}
	raw, ok, err := stringArg(args, "intent_id")
	if err != "" {
		return conv.Refuse, "", IntentTool + ` needs "intent_id", a string of the form INT-XXX: ` + err + ". " + available(p)
	}
	raw = strings.TrimSpace(raw)
	if !ok || raw == "" {
		return conv.Claim, "", listIntents(p)
	}
	if !policy.IDPattern.MatchString(raw) {
		return conv.Refuse, "", quote(raw) + " is not a valid intent ID (format INT-XXX, e.g. INT-001). " + available(p)
	}
	in, found := p.Intent(raw)
	if !found {
		return conv.Refuse, "", "Unknown intent ID " + quote(raw) + ". " + available(p)
	}
	return conv.Claim, in.ID, in.ContextXML()
}

// check decides on one call other than select_active_intent. It returns the
// verdict (Pass or Refuse), the rule that decided and the refusal text.
func (h *Hook) check(call *hooks.Call, p *policy.Policy, cur string, c conv.ToolCall) (conv.Verdict, string, string) {
	switch {
	case call.StateUnavailable:
		return h.failMode(c.Name, RuleStateUnavailable,
			"Tool call refused: shepherd cannot read this session's state, so its active intent is unknown, and governance fails closed. Only read-only tools may run until it recovers.")
	case p == nil:
		return h.failMode(c.Name, RulePolicyUnavailable,
			"Tool call refused: the intents policy is unavailable"+h.problem()+", and governance fails closed. Only read-only tools may run until a valid policy is loaded.")
	}
	in, ok := p.Intent(cur)
	if !ok {
		if h.allowed[c.Name] {
			return conv.Pass, RuleAlwaysAllowed, ""
		}
		if cur != "" {
			return conv.Refuse, RuleGatekeeper, "The active intent " + cur + " is no longer defined in the intents policy. " + GatekeeperMessage
		}
		return conv.Refuse, RuleGatekeeper, GatekeeperMessage
	}
	if entry, ok := in.DisallowsTool(c.Name); ok {
		return conv.Refuse, RuleDisallowTools, "Tool call refused: intent " + in.ID + " disallows the tool " + quote(c.Name) +
			" (disallow_tools entry " + quote(entry) + "). Use another tool, or select an intent that allows it."
	}
	if pat, ok := in.MatchPattern(c.Args); ok {
		return conv.Refuse, RuleDisallowPatterns, "Tool call refused: the arguments of this " + c.Name + " call match " + quote(pat) +
			", a pattern intent " + in.ID + " disallows (disallow_patterns)."
	}
	// An ask rule holds the call unless a refusing rule below refuses it:
	// the first ask found gives the reason.
	var ask asked
	if entry, ok := in.AsksTool(c.Name); ok {
		ask.note(RuleAskTools, "Tool call held for a person's approval: intent "+in.ID+" asks before the tool "+quote(c.Name)+
			" (ask_tools entry "+quote(entry)+").")
	}
	if pat, ok := in.MatchAskPattern(c.Args); ok {
		ask.note(RuleAskPatterns, "Tool call held for a person's approval: the arguments of this "+c.Name+" call match "+quote(pat)+
			", a pattern intent "+in.ID+" asks about (ask_patterns).")
	}
	// A listed tool's paths come from its table entry (an error only then);
	// an unlisted one's are inferred from path-like arguments.
	paths, known, err := h.cfg.PathArgs.Paths(c.Name, c.Args)
	if !known && h.cfg.InferPaths && !h.allowed[c.Name] && !h.cfg.ShellArgs.Knows(c.Name) {
		paths, err = policy.InferPaths(c.Args)
	}
	if err != nil {
		return conv.Refuse, RuleScope, "Tool call refused: shepherd could not tell which files this " + c.Name +
			" call touches (" + err.Error() + "), so it cannot check them against the scope of intent " + in.ID + "."
	}
	for _, raw := range paths {
		v, rule, msg := h.checkPath(in, c.Name, raw, false)
		if v == conv.Refuse {
			return v, rule, msg
		}
		if v == conv.Hold {
			ask.note(rule, msg)
		}
	}
	v, rule, msg := h.checkShell(in, c)
	if v == conv.Refuse {
		return v, rule, msg
	}
	if v == conv.Hold {
		ask.note(rule, msg)
	}
	if ask.rule != "" {
		return conv.Hold, ask.rule, ask.reason
	}
	return conv.Pass, RuleChecksPassed, ""
}

// asked is the first ask rule a call matched.
type asked struct{ rule, reason string }

func (a *asked) note(rule, reason string) {
	if a.rule == "" {
		a.rule, a.reason = rule, reason
	}
}

// checkPath checks one raw path a call of tool names against the scope of
// in; shell says the path is a file a shell command writes. It returns
// Hold for a path an ask_glob matches.
func (h *Hook) checkPath(in *policy.Intent, tool, raw string, shell bool) (conv.Verdict, string, string) {
	rel, inside := policy.NormalizePath(h.cfg.Root, raw)
	if !inside {
		what := quote(raw) + " is"
		if shell {
			what = "this " + tool + " command writes " + quote(raw) + ", which is"
		}
		return conv.Refuse, RuleScope, "Tool call refused: " + what + " outside the workspace (" + h.cfg.Root +
			"), so it is outside the scope of intent " + in.ID + "."
	}
	switch v, reason := in.ScopePath(rel); v {
	case policy.ScopeRefuse:
		what := tool + " on " + quote(rel) + " is"
		if shell {
			what = "this " + tool + " command writes " + quote(rel) + ", which is"
		}
		return conv.Refuse, RuleScope, "Tool call refused: " + what + " outside the scope of intent " +
			in.ID + ": " + reason + ". Work on files in scope, or select an intent whose scope covers this file."
	case policy.ScopeAsk:
		what := tool + " on " + quote(rel)
		if shell {
			what = "this " + tool + " command writing " + quote(rel)
		}
		return conv.Hold, RuleAskScope, "Tool call held for a person's approval: " + what + " needs approval under intent " +
			in.ID + ": " + reason + "."
	}
	return conv.Pass, "", ""
}

// checkShell checks the files the shell commands of call c write against
// the scope of in. A target out of scope is refused first, naming it; a
// command whose targets cannot all be known is refused next unless
// AllowUnparsed; a target an ask_glob matches holds the call last.
func (h *Hook) checkShell(in *policy.Intent, c conv.ToolCall) (conv.Verdict, string, string) {
	var ask asked
	cmds, known, err := h.cfg.ShellArgs.Commands(c.Name, c.Args)
	if !known {
		return conv.Pass, "", ""
	}
	unparsed := ""
	if err != nil {
		unparsed = err.Error()
	}
	for _, cmd := range cmds {
		var w shell.Writes
		if cmd.Argv != nil {
			w = shell.AnalyzeArgv(cmd.Argv)
		} else {
			w = shell.Analyze(cmd.Script)
		}
		for _, t := range w.Targets {
			if cmd.Dir != "" && !path.IsAbs(t) {
				t = path.Join(cmd.Dir, t)
			}
			v, rule, msg := h.checkPath(in, c.Name, t, true)
			if v == conv.Refuse {
				return v, rule, msg
			}
			if v == conv.Hold {
				ask.note(rule, msg)
			}
		}
		if unparsed == "" && w.Unparsed != "" {
			unparsed = w.Unparsed
		}
	}
	if unparsed != "" && !h.cfg.AllowUnparsed {
		return conv.Refuse, RuleUnparsedCommand, "Tool call refused: shepherd cannot tell which files this " + c.Name +
			" command writes (" + unparsed + "), so it cannot check them against the scope of intent " + in.ID +
			". Write the command with literal file paths, or use the file-editing tools."
	}
	if ask.rule != "" {
		return conv.Hold, ask.rule, ask.reason
	}
	return conv.Pass, "", ""
}

// failMode decides a call when governance cannot: always-allowed tools and
// fail-open pass, everything else is refused with msg.
func (h *Hook) failMode(tool, rule, msg string) (conv.Verdict, string, string) {
	if h.allowed[tool] {
		return conv.Pass, RuleAlwaysAllowed, ""
	}
	if h.cfg.FailOpen {
		return conv.Pass, RuleFailOpen, ""
	}
	return conv.Refuse, rule, msg
}

func (h *Hook) problem() string {
	if h.cfg.PolicyProblem == nil {
		return ""
	}
	if s := h.cfg.PolicyProblem(); s != "" {
		return " (" + s + ")"
	}
	return ""
}

// available names the policy's intents for an error result.
func available(p *policy.Policy) string {
	ids := p.IDs()
	if len(ids) == 0 {
		return "The policy defines no intents."
	}
	return "Available intents: " + strings.Join(ids, ", ") + "."
}

// listIntents is the result of select_active_intent without an id.
func listIntents(p *policy.Policy) string {
	if len(p.Intents) == 0 {
		return "The policy defines no intents."
	}
	var b strings.Builder
	b.WriteString("Available intents (call select_active_intent with one of these IDs):")
	for i := range p.Intents {
		b.WriteString("\n- ")
		b.WriteString(p.Intents[i].ID)
		b.WriteString(": ")
		b.WriteString(p.Intents[i].Summary)
	}
	return b.String()
}

func quote(s string) string { return `"` + s + `"` }

// stringArg reads the string argument name (a plain key, no gjson
// metacharacters) of a call's JSON arguments. ok is
// false when it is absent or null; problem is set when the arguments are not
// a JSON object or the value is not a string.
func stringArg(args []byte, name string) (val string, ok bool, problem string) {
	if len(strings.TrimSpace(string(args))) == 0 {
		return "", false, ""
	}
	if !gjson.ValidBytes(args) || !gjson.ParseBytes(args).IsObject() {
		return "", false, "the arguments are not a JSON object"
	}
	v := gjson.GetBytes(args, name)
	switch v.Type {
	case gjson.Null:
		return "", false, ""
	case gjson.String:
		return v.String(), true, ""
	}
	return "", false, name + " is " + strings.ToLower(v.Type.String()) + ", not a string"
}

// OnOutcome implements hooks.OutcomeHook: it reports what finally happened
// to the calls governance allowed (Options.OnOutcome), so an operator sees
// how many allowed calls reached the agent and how many were lost on the
// way (the turn ended first, or the call was cut by the output limit).
// Claimed and refused calls, exempt tools and
// select_active_intent are not counted.
func (h *Hook) OnOutcome(_ context.Context, _ *hooks.Call, out *conv.TurnOutcome) error {
	if h.cfg.OnOutcome == nil || out == nil {
		return nil
	}
	for _, o := range out.Calls {
		if h.exempt[o.Call.Name] || o.Call.Name == IntentTool {
			continue
		}
		switch o.Fate {
		case conv.FateDelivered, conv.FateUndelivered, conv.FateDropped:
			h.cfg.OnOutcome(string(o.Fate))
		}
	}
	return nil
}
