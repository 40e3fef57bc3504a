package format

import (
	"context"
	"time"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// Options configure the hook (Config.Provision builds them from the
// configuration section).
type Options struct {
	// Scope says which requests the hook acts on (Scope.Active).
	Scope hooks.Scope
	// Rules are the parsed format.rules, in order.
	Rules []Rule
	// Events receives format.applied (nil: none).
	Events events.Emitter
	// OnApplied counts a rule applied (nil: not counted).
	OnApplied func(rule string)
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Hook appends a format instruction to prompts (docs/context.md): on a
// request whose newest message is the user's prompt (Prompt), the first
// rule whose match finds one of that message's text blocks appends its
// instruction to the newest user turn. The turn engine records the text in
// the session's ledger under that message and replays it on every later
// request, byte for byte, so the upstream view stays append-only. A
// tool-loop request, a side request and a request the scope leaves out get
// nothing. It keeps no state and is safe for concurrent use.
type Hook struct{ cfg Options }

var _ hooks.RequestHook = (*Hook)(nil)

// New builds the hook.
func New(cfg Options) *Hook {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Hook{cfg: cfg}
}

// Name implements hooks.Hook.
func (h *Hook) Name() string { return Name }

// OnRequest appends the instruction of the first rule the prompt matches.
func (h *Hook) OnRequest(_ context.Context, call *hooks.Call, req *conv.Request) (conv.RequestEdits, *hooks.Response, error) {
	if call.Side != "" || !h.cfg.Scope.Active(call, Name) {
		return conv.RequestEdits{}, nil, nil
	}
	texts, ok := Prompt(req)
	if !ok {
		return conv.RequestEdits{}, nil, nil
	}
	r, ok := First(h.cfg.Rules, texts)
	if !ok {
		return conv.RequestEdits{}, nil, nil
	}
	if h.cfg.OnApplied != nil {
		h.cfg.OnApplied(r.Name)
	}
	if h.cfg.Events != nil {
		h.cfg.Events.Emit(events.Event{
			Type: events.FormatApplied, At: h.cfg.Now(), Session: call.SessionID, Tenant: call.Tenant,
			Route: call.Route, RequestID: call.RequestID, Data: map[string]any{"rule": r.Name},
		})
	}
	return conv.RequestEdits{AppendUserText: []string{r.Instruction()}}, nil, nil
}

// Prompt returns the text blocks of req's newest user message when req is
// a prompt: no tool result after the newest assistant message (that is a
// tool-loop request) and a user message with text there. A request ending
// with an assistant message (a prefill) is no prompt.
func Prompt(req *conv.Request) ([]string, bool) {
	if req == nil || req.ToolLoop() {
		return nil, false
	}
	var texts []string
	found := false
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := &req.Messages[i]
		if m.Role == conv.RoleAssistant {
			break
		}
		if found || m.Role != conv.RoleUser {
			continue
		}
		for j := range m.Blocks {
			if b := &m.Blocks[j]; b.Kind == conv.BlockText {
				texts = append(texts, b.Text)
			}
		}
		found = len(texts) > 0
	}
	return texts, found
}
