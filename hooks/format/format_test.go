package format

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/ruleline"
)

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       Rule // Match compared by its source
		src        string
		instr      string
		err        string
	}{
		{name: "words and bullets", line: `summary match=(?i)\bsummar(y|ise|ize)\b words=120 bullets=5`,
			want: Rule{Name: "summary", Words: 120, Bullets: 5}, src: `(?i)\bsummar(y|ise|ize)\b`,
			instr: "Format: at most 120 words; at most 5 bullets."},
		{name: "order", line: `list match=(?i)^list words=80 bullets=8 order=importance`,
			want: Rule{Name: "list", Words: 80, Bullets: 8, Importance: true}, src: `(?i)^list`,
			instr: "Format: at most 80 words; at most 8 bullets; most important first."},
		{name: "keys in any order, singular", line: `one order=importance bullets=1 match=x words=1`,
			want: Rule{Name: "one", Words: 1, Bullets: 1, Importance: true}, src: `x`,
			instr: "Format: at most 1 word; at most 1 bullet; most important first."},
		{name: "order alone", line: `rank match=rank order=importance`,
			want: Rule{Name: "rank", Importance: true}, src: `rank`, instr: "Format: most important first."},
		{name: "custom text, double-quoted", line: `custom match=(?i)why text="Answer in one sentence."`,
			want: Rule{Name: "custom", Text: "Answer in one sentence."}, src: `(?i)why`, instr: "Answer in one sentence."},
		{name: "raw-quoted regexp with blanks", line: "brief match=`(?i)\\bgive me a (short|brief)\\b` words=50",
			want: Rule{Name: "brief", Words: 50}, src: `(?i)\bgive me a (short|brief)\b`, instr: "Format: at most 50 words."},
		{name: "escapes in a double-quoted text", line: `q match=q text="Say \"done\"\tthen stop."`,
			want: Rule{Name: "q", Text: "Say \"done\"\tthen stop."}, src: `q`, instr: "Say \"done\"\tthen stop."},
		{name: "tabs separate", line: "t\tmatch=x\twords=3", want: Rule{Name: "t", Words: 3}, src: "x", instr: "Format: at most 3 words."},

		{name: "empty", line: "   ", err: "is empty"},
		{name: "no name", line: "match=x words=3", err: "must start with a name"},
		{name: "bad name", line: "sum/mary match=x words=3", err: `rule name "sum/mary"`},
		{name: "no match", line: "s words=3", err: "needs match=<regexp>"},
		{name: "empty match", line: "s match= words=3", err: "match is empty"},
		{name: "bad regexp", line: "s match=(unclosed words=3", err: "rule s: match: error parsing regexp"},
		{name: "zero words", line: "s match=x words=0", err: `words "0" is not a positive integer`},
		{name: "negative bullets", line: "s match=x bullets=-2", err: `bullets "-2" is not a positive integer`},
		{name: "words not a number", line: "s match=x words=many", err: `words "many" is not a positive integer`},
		{name: "unknown order", line: "s match=x order=alphabetical", err: `order "alphabetical" is not importance`},
		{name: "unknown key", line: "s match=x words=3 sentences=2", err: `unknown key "sentences"`},
		{name: "duplicate key", line: "s match=x words=3 words=4", err: "words is given twice"},
		{name: "text and bounds", line: `s match=x words=3 text="Be brief."`, err: "text replaces words, bullets and order"},
		{name: "does nothing", line: "s match=x", err: "does nothing"},
		{name: "empty text", line: `s match=x text="  "`, err: "text is empty"},
		{name: "not key=value", line: "s match=x brief", err: `"brief" is not key=value`},
		{name: "unterminated quote", line: `s match=x text="Be brief.`, err: "unterminated or invalid quoted value"},
		{name: "text after quote", line: `s match=x text="Be"brief`, err: "text after the quoted value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRule(tc.line)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.src, r.Match.String())
			require.Equal(t, tc.instr, r.Instruction())
			r.Match, r.instruction = nil, ""
			require.Equal(t, tc.want, r)
		})
	}
}

func TestParseRulesDuplicates(t *testing.T) {
	rules, errs := ParseRules([]string{"a match=x words=3", "b match=y words=0", "a match=z words=4", "c match=z words=4"})
	require.Len(t, errs, 2)
	require.ErrorContains(t, errs[0], "rule b: words")
	require.ErrorContains(t, errs[1], "rule a: the name is used twice")
	require.Len(t, rules, 2)
	require.Equal(t, "a", rules[0].Name)
	require.Equal(t, "c", rules[1].Name)
}

// FuzzParseRule: a line either parses into a rule with a compiled match
// and an instruction, or is refused with an error naming the problem;
// it never panics.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{
		`summary match=(?i)\bsummar(y|ise|ize)\b words=120 bullets=5`,
		`custom match=x text="Answer in one sentence."`,
		"raw match=`a b` order=importance",
		`x match="unterminated`, "=", "a b=", `a b=""`, "a match=x words=99999999999999999999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		r, err := ParseRule(line)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if r.Match == nil || r.Instruction() == "" || !ruleline.ValidName(r.Name) {
			t.Fatalf("ParseRule(%q) = %+v", line, r)
		}
		if r.Text == "" && !strings.HasPrefix(r.Instruction(), "Format: ") {
			t.Fatalf("rendered instruction %q", r.Instruction())
		}
	})
}

func text(s string) conv.Block { return conv.Block{Kind: conv.BlockText, Text: s} }
func msg(role conv.Role, blocks ...conv.Block) conv.Message {
	return conv.Message{Role: role, Blocks: blocks}
}

var (
	callBlock   = conv.Block{Kind: conv.BlockToolCall, ToolCallID: "c1", ToolName: "Read"}
	resultBlock = conv.Block{Kind: conv.BlockToolResult, ToolCallID: "c1", Text: "summary of the file"}
)

func TestPrompt(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []conv.Message
		want []string // nil: not a prompt
	}{
		{"no messages", nil, nil},
		{"an opening prompt", []conv.Message{msg(conv.RoleSystem, text("sys")), msg(conv.RoleUser, text("summarise this"))}, []string{"summarise this"}},
		{"the agent's reminder blocks and the prompt", []conv.Message{msg(conv.RoleUser, text("<system-reminder>r</system-reminder>"), text("list the files"))},
			[]string{"<system-reminder>r</system-reminder>", "list the files"}},
		{"the newest of two user messages", []conv.Message{msg(conv.RoleUser, text("first")), msg(conv.RoleUser, text("second"))}, []string{"second"}},
		{"a later prompt", []conv.Message{msg(conv.RoleUser, text("a")), msg(conv.RoleAssistant, text("b")), msg(conv.RoleUser, text("c"))}, []string{"c"}},
		{"tool results", []conv.Message{msg(conv.RoleUser, text("a")), msg(conv.RoleAssistant, callBlock), msg(conv.RoleUser, resultBlock)}, nil},
		{"tool results with text", []conv.Message{msg(conv.RoleUser, text("a")), msg(conv.RoleAssistant, callBlock), msg(conv.RoleUser, resultBlock, text("summary please"))}, nil},
		{"chat tool message then user text", []conv.Message{msg(conv.RoleUser, text("a")), msg(conv.RoleAssistant, callBlock), msg(conv.RoleTool, resultBlock), msg(conv.RoleUser, text("summary please"))}, nil},
		{"a prefill", []conv.Message{msg(conv.RoleUser, text("summary")), msg(conv.RoleAssistant, text("Sure"))}, nil},
		{"a user message without text", []conv.Message{msg(conv.RoleUser, conv.Block{Kind: conv.BlockOther})}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Prompt(&conv.Request{Messages: tc.msgs})
			require.Equal(t, tc.want != nil, ok)
			require.Equal(t, tc.want, got)
		})
	}
	_, ok := Prompt(nil)
	require.False(t, ok)
}

func mustRules(t *testing.T, lines ...string) []Rule {
	t.Helper()
	rules, errs := ParseRules(lines)
	require.Empty(t, errs)
	return rules
}

// TestOnRequest: the first matching rule wins, on prompts only, per text
// block, within the scope; the instruction is appended as user text.
func TestOnRequest(t *testing.T) {
	rules := mustRules(t,
		`summary match=(?i)\bsummar(y|ise|ize)\b words=120 bullets=5`,
		`list match=(?i)^list words=80 bullets=8 order=importance`,
		`custom match=(?i)\bwhy\b text="Answer in one sentence."`,
	)
	prompt := func(blocks ...conv.Block) []conv.Message { return []conv.Message{msg(conv.RoleUser, blocks...)} }
	for _, tc := range []struct {
		name     string
		enabled  hooks.OptIn
		features []string
		side     string
		msgs     []conv.Message
		want     string // "" for nothing appended
	}{
		{"summary", hooks.OptInOn, nil, "", prompt(text("Please SUMMARISE the design")), "Format: at most 120 words; at most 5 bullets."},
		{"first match wins", hooks.OptInOn, nil, "", prompt(text("list why, in summary")), "Format: at most 120 words; at most 5 bullets."},
		{"^ anchors at a block's start", hooks.OptInOn, nil, "", prompt(text("<system-reminder>x</system-reminder>"), text("List the open issues")), "Format: at most 80 words; at most 8 bullets; most important first."},
		{"^ does not match mid-text", hooks.OptInOn, nil, "", prompt(text("please list the open issues")), ""},
		{"custom text", hooks.OptInOn, nil, "", prompt(text("Why does it fail?")), "Answer in one sentence."},
		{"no rule matches", hooks.OptInOn, nil, "", prompt(text("fix the test")), ""},
		{"tool results are no prompt", hooks.OptInOn, nil, "", []conv.Message{msg(conv.RoleUser, text("summary")), msg(conv.RoleAssistant, callBlock), msg(conv.RoleUser, resultBlock)}, ""},
		{"side request", hooks.OptInOn, nil, "title", prompt(text("summary")), ""},
		{"header mode without the header", hooks.OptInHeader, nil, "", prompt(text("summary")), ""},
		{"header mode with the header", hooks.OptInHeader, []string{"format"}, "", prompt(text("summary")), "Format: at most 120 words; at most 5 bullets."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd := &events.Recorder{}
			applied := map[string]int{}
			h := New(Options{Scope: hooks.Scope{Enabled: tc.enabled}, Rules: rules, Events: fd,
				OnApplied: func(r string) { applied[r]++ }})
			call := &hooks.Call{SessionID: "s", Tenant: "t", RequestID: "r", Route: "messages", Side: tc.side, Features: tc.features}
			e, resp, err := h.OnRequest(t.Context(), call, &conv.Request{Messages: tc.msgs})
			require.NoError(t, err)
			require.Nil(t, resp)
			require.Empty(t, call.TakeDeferred(), "format keeps no session state")
			if tc.want == "" {
				require.True(t, e.Empty())
				require.Empty(t, fd.All())
				require.Empty(t, applied)
				return
			}
			require.Equal(t, conv.RequestEdits{AppendUserText: []string{tc.want}}, e)
			require.Len(t, fd.All(), 1)
			ev := fd.All()[0]
			require.Equal(t, events.FormatApplied, ev.Type)
			require.Equal(t, "s", ev.Session)
			require.Len(t, applied, 1)
			for name, n := range applied {
				require.Equal(t, 1, n)
				require.Equal(t, map[string]any{"rule": name}, ev.Data)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	var c Config
	c.SetDefaults()
	require.Empty(t, c.Validate(), "the defaults are valid")
	require.Nil(t, c.OwnedTools())
	p, err := c.Provision(hooks.Env{Metrics: prometheus.NewRegistry(), Log: zap.NewNop(), Events: events.Nop{}})
	require.NoError(t, err)
	require.Nil(t, p, "off provisions nothing")
	c.Enabled = hooks.OptInOn
	p, err = c.Provision(hooks.Env{Metrics: prometheus.NewRegistry(), Log: zap.NewNop(), Events: events.Nop{}})
	require.NoError(t, err)
	require.Nil(t, p, "no rule: nothing to apply")

	c.Enabled, c.APIs = "maybe", []string{"fax"}
	c.Rules = []string{"ok match=x words=3", "bad match=( words=3", "ok match=y words=2", "z match=x"}
	var got []hooks.Problem
	got = append(got, c.Validate()...)
	keys := make([]string, len(got))
	for i, p := range got {
		keys[i] = p.Key
	}
	require.Equal(t, []string{"format.enabled", "format.apis", "format.rules", "format.rules", "format.rules"}, keys)
	require.Contains(t, got[2].Msg, "rule bad: match")
	require.Contains(t, got[3].Msg, "rule ok: the name is used twice")
	require.Contains(t, got[4].Msg, "rule z: does nothing")
}

// TestProvision: the plug-in joins the APIs of its scope and counts each
// rule applied, every rule's series present from the start.
func TestProvision(t *testing.T) {
	var c Config
	c.SetDefaults()
	c.Enabled, c.APIs = hooks.OptInOn, []string{"openai_chat"}
	c.Rules = []string{"summary match=(?i)summary words=100", "why match=(?i)why text=Briefly."}
	reg := prometheus.NewRegistry()
	p, err := c.Provision(hooks.Env{Metrics: reg, Log: zap.NewNop(), Events: events.Nop{}})
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	h, err := p.Hook(hooks.API{Key: "gemini"})
	require.NoError(t, err)
	require.Nil(t, h)
	h, err = p.Hook(hooks.API{Key: "openai_chat"})
	require.NoError(t, err)
	e, _, err := h.(hooks.RequestHook).OnRequest(t.Context(), &hooks.Call{},
		&conv.Request{Messages: []conv.Message{msg(conv.RoleUser, text("why?"))}})
	require.NoError(t, err)
	require.Equal(t, []string{"Briefly."}, e.AppendUserText)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		require.Equal(t, "shepherd_format_applied_total", mf.GetName())
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	require.Equal(t, map[string]float64{"summary": 0, "why": 1}, got)
}
