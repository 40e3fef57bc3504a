package routing

import (
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/ruleline"
	"github.com/shepherd-proxy/shepherd/state"
)

func mustTable(t *testing.T, rules, ups []string) *Table {
	t.Helper()
	tb, errs := Parse(rules, ups)
	if len(errs) > 0 {
		t.Fatalf("Parse: %v", errs)
	}
	return tb
}

func TestMatch(t *testing.T) {
	tb := mustTable(t, []string{
		`no-gpt4 model=gpt-4* refuse="gpt-4 is retired here"`,
		`subagents kind=subagent model=claude-opus-* set_model=claude-sonnet-4-5 upstream=cheap`,
		`edits phase=edit set_model=claude-haiku-4-5`,
		`results phase=tool_results agent=codex set_model=gpt-5-mini`,
		`huge min_input_tokens=100000 set_model=claude-sonnet-4-5 sticky=false`,
		`small-side kind=side max_input_tokens=2000 api=anthropic upstream=anthropic`,
		`gem api=gemini model=gemini-2.5-pro set_model=gemini-2.5-flash`,
	}, []string{`cheap api=anthropic base_url=http://127.0.0.1:9/x credential_env=CHEAP_KEY`})
	main := func(mod string) Request {
		return Request{API: "anthropic", Family: "anthropic", Model: mod, Agent: "claude-code", Kind: KindMain, InputTokens: 10, Phase: PhasePrompt}
	}
	cases := []struct {
		name string
		q    Request
		want string // rule name, "" for none
	}{
		{"no rule", main("claude-opus-4-5"), ""},
		{"refusal glob", Request{API: "openai_chat", Family: "openai", Model: "gpt-4.1", Kind: KindMain}, "no-gpt4"},
		{"glob is anchored", Request{API: "openai_chat", Family: "openai", Model: "my-gpt-4", Kind: KindMain}, ""},
		{"subagent", func() Request { q := main("claude-opus-4-5"); q.Kind = KindSubagent; return q }(), "subagents"},
		{"subagent rule needs its family", func() Request {
			q := main("claude-opus-4-5")
			q.API, q.Family, q.Kind = "openai_chat", "openai", KindSubagent
			return q
		}(), ""},
		{"subagent of another model", func() Request { q := main("claude-sonnet-4-5"); q.Kind = KindSubagent; return q }(), ""},
		{"first match wins: edit before tool_results", func() Request { q := main("x"); q.Phase, q.Agent = PhaseEdit, "codex"; return q }(), "edits"},
		{"tool_results matches an edit phase", func() Request {
			q := Request{API: "openai_responses", Family: "openai", Model: "gpt-5", Agent: "codex", Kind: KindMain, Phase: PhaseToolResults}
			return q
		}(), "results"},
		{"agent glob", func() Request { q := main("x"); q.Phase = PhaseToolResults; return q }(), ""},
		{"min size", func() Request { q := main("x"); q.InputTokens = 100000; return q }(), "huge"},
		{"below min size", func() Request { q := main("x"); q.InputTokens = 99999; return q }(), ""},
		{"max size and kind", func() Request { q := main("x"); q.Kind, q.InputTokens = KindSide, 2000; return q }(), "small-side"},
		{"above max size", func() Request { q := main("x"); q.Kind, q.InputTokens = KindSide, 2001; return q }(), ""},
		{"api", Request{API: "gemini", Family: "gemini", Model: "gemini-2.5-pro", Kind: KindMain}, "gem"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := tb.Match(&c.q)
			got := ""
			if r != nil {
				got = r.Name
			}
			if got != c.want {
				t.Fatalf("matched %q, want %q", got, c.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		rule, want string
	}{
		{``, "empty"},
		{`model=x set_model=y`, "must start with a name"},
		{`r`, "does nothing"},
		{`r model=claude-*`, "does nothing"},
		{`r model=[ set_model=y`, "not a valid glob"},
		{`r kind=worker set_model=y`, "kind"},
		{`r phase=thinking set_model=y`, "phase"},
		{`r api=bedrock set_model=y`, "unknown wire API"},
		{`r min_input_tokens=-1 set_model=y`, "non-negative"},
		{`r min_input_tokens=10 max_input_tokens=5 set_model=y`, "above"},
		{`r refuse="no" set_model=y`, "cannot be combined"},
		{`r refuse="no" sticky=false`, "no meaning"},
		{`r refuse=""`, "needs a message"},
		{`r set_model=a set_model=b`, "twice"},
		{`r colour=red set_model=y`, "unknown key"},
		{`r sticky=maybe set_model=y`, "true or false"},
		{`r refuse="unterminated`, "quoted"},
		{`r refuse="a"b`, "after the quoted"},
		{`r set_model`, "key=value"},
		{`bad/name set_model=y`, "rule name"},
	}
	for _, c := range cases {
		_, err := ParseRule(c.rule)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseRule(%q) = %v, want an error with %q", c.rule, err, c.want)
		}
	}
	r, err := ParseRule(`r  model=claude-*   refuse="not \"here\", sorry"`)
	if err != nil || r.Refuse != `not "here", sorry` || r.Model != "claude-*" {
		t.Fatalf("%+v %v", r, err)
	}
	if r, _ := ParseRule(`r set_model=y`); !r.Sticky {
		t.Fatal("sticky must default to true")
	}
}

func TestParseUpstreamErrors(t *testing.T) {
	cases := []struct{ line, want string }{
		{`anthropic api=anthropic base_url=http://h`, "built-in"},
		{`u api=bedrock base_url=http://h`, "api"},
		{`u api=openai`, "required"},
		{`u api=openai base_url=ftp://h`, "scheme"},
		{`u api=openai base_url=http://user:secret@h`, "user info"},
		{`u api=openai base_url=http://h credential_env=1BAD`, "credential_env"},
		{`u api=openai base_url=http://h token=x`, "unknown key"},
	}
	for _, c := range cases {
		_, err := ParseUpstream(c.line)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseUpstream(%q) = %v, want %q", c.line, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error quotes the secret: %v", err)
		}
	}
}

func TestNewChecksReferences(t *testing.T) {
	_, errs := Parse([]string{
		`a upstream=nowhere`,
		`b api=openai_chat upstream=cheap`,
		`c upstream=openai`,
		`c set_model=x`,
	}, []string{
		`cheap api=anthropic base_url=http://h`,
		`cheap api=openai base_url=http://h2`,
	})
	joined := ""
	for _, e := range errs {
		joined += e.Error() + "\n"
	}
	for _, want := range []string{"upstream cheap is defined twice", `upstream "nowhere"`, "api openai_chat is a openai API but upstream cheap serves anthropic", "rule c is defined twice"} {
		if !strings.Contains(joined, want) {
			t.Errorf("missing %q in:\n%s", want, joined)
		}
	}
	if len(errs) != 4 {
		t.Errorf("%d errors, want 4:\n%s", len(errs), joined)
	}
}

func TestPhaseOf(t *testing.T) {
	isEdit := func(n string) bool { return n == "Edit" || n == "write_file" }
	user := func(bs ...conv.Block) conv.Message { return conv.Message{Role: conv.RoleUser, Blocks: bs} }
	asst := conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{
		{Kind: conv.BlockToolCall, ToolCallID: "1", ToolName: "Edit"},
		{Kind: conv.BlockToolCall, ToolCallID: "2", ToolName: "Bash"},
	}}
	text := conv.Block{Kind: conv.BlockText, Text: "hi"}
	res := func(id, name string) conv.Block {
		return conv.Block{Kind: conv.BlockToolResult, ToolCallID: id, ToolName: name}
	}
	cases := []struct {
		name string
		msgs []conv.Message
		want Phase
	}{
		{"opening prompt", []conv.Message{user(text)}, PhasePrompt},
		{"prompt after a turn", []conv.Message{user(text), asst, user(text)}, PhasePrompt},
		{"edit result by call id", []conv.Message{user(text), asst, user(res("1", ""))}, PhaseEdit},
		{"edit result by its own name", []conv.Message{user(text), asst, {Role: conv.RoleTool, Blocks: []conv.Block{res("", "write_file")}}}, PhaseEdit},
		{"mixed results", []conv.Message{user(text), asst, user(res("1", ""), res("2", ""))}, PhaseToolResults},
		{"results and text", []conv.Message{user(text), asst, user(res("2", ""), text)}, PhaseToolResults},
		{"openai tool messages", []conv.Message{user(text), asst, {Role: conv.RoleTool, Blocks: []conv.Block{res("1", "")}}, {Role: conv.RoleTool, Blocks: []conv.Block{res("1", "")}}}, PhaseEdit},
		{"prefill", []conv.Message{user(text), asst}, PhaseNone},
		{"empty", nil, PhaseNone},
	}
	for _, c := range cases {
		if got := PhaseOf(&conv.Request{Messages: c.msgs}, isEdit); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if PhaseOf(nil, isEdit) != PhaseNone {
		t.Error("nil view")
	}
}

func TestKindAndSize(t *testing.T) {
	if KindOf("json_output", true) != KindSide || KindOf("", true) != KindSubagent || KindOf("", false) != KindMain {
		t.Fatal("KindOf")
	}
	if EstimateTokens(4001) != 1000 {
		t.Fatal("EstimateTokens")
	}
	if Lane(KindSide) != "" || Lane(KindMain) == Lane(KindSubagent) {
		t.Fatal("Lane")
	}
}

func TestDecideSticky(t *testing.T) {
	tb := mustTable(t, []string{
		`huge min_input_tokens=5000 set_model=claude-haiku-4-5 sticky=false`,
		`big min_input_tokens=1000 set_model=claude-sonnet-4-5 upstream=cheap`,
	}, []string{`cheap api=anthropic base_url=http://h`})
	q := func(mod string, tokens int64) *Request {
		return &Request{API: "anthropic", Family: "anthropic", Model: mod, Kind: KindMain, InputTokens: tokens}
	}
	// First request: no rule, the default decision is recorded.
	r1 := q("claude-opus-4-5", 10)
	d := tb.Decide(r1, tb.Match(r1), nil, "main")
	want := state.Route{RequestedModel: "claude-opus-4-5", Model: "claude-opus-4-5", Upstream: "anthropic"}
	if d.Route != want || !d.Record || d.Sticky {
		t.Fatalf("first: %+v", d)
	}
	rec := d.Route
	// A later request matches "big" but the session keeps its start.
	r2 := q("claude-opus-4-5", 2000)
	d = tb.Decide(r2, tb.Match(r2), &rec, "main")
	if d.Route != rec || !d.Sticky || d.Record || d.Rule == nil || d.Rule.Name != "big" {
		t.Fatalf("sticky: %+v", d)
	}
	// "huge" opts out: it switches, and is not recorded.
	r3 := q("claude-opus-4-5", 6000)
	d = tb.Decide(r3, tb.Match(r3), &rec, "main")
	if d.Route.Model != "claude-haiku-4-5" || d.Route.Upstream != "anthropic" || d.Sticky || d.Record {
		t.Fatalf("opt-out: %+v", d)
	}
	// The agent switches models itself: routed afresh, recorded.
	r4 := q("claude-sonnet-4-5", 2000)
	d = tb.Decide(r4, tb.Match(r4), &rec, "main")
	if d.Route.Upstream != "cheap" || d.Route.Rule != "big" || d.Sticky || !d.Record {
		t.Fatalf("agent switch: %+v", d)
	}
	// A session that began on "big" stays there for small requests.
	big := d.Route
	r5 := q("claude-sonnet-4-5", 1)
	if d = tb.Decide(r5, tb.Match(r5), &big, "main"); d.Route != big || !d.Sticky {
		t.Fatalf("kept: %+v", d)
	}
	// A record naming an upstream that is gone is replaced.
	gone := state.Route{RequestedModel: "claude-opus-4-5", Model: "m", Upstream: "removed"}
	if d = tb.Decide(r1, nil, &gone, "main"); d.Sticky || !d.Record || d.Route.Upstream != "anthropic" {
		t.Fatalf("stale: %+v", d)
	}
	// Side requests keep and follow nothing.
	if d = tb.Decide(r2, tb.Match(r2), nil, ""); d.Record || d.Route.Upstream != "cheap" {
		t.Fatalf("side: %+v", d)
	}
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{`r model=claude-* set_model=x`, `r refuse="a \"b\""`, `r kind=side upstream=u sticky=false`, `x = y`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		if !ruleline.ValidName(r.Name) || (r.Refuse == "" && r.SetModel == "" && r.Upstream == "") {
			t.Fatalf("accepted an invalid rule %q: %+v", s, r)
		}
		q := &Request{Model: "m", Agent: "a"}
		_ = r.matches(q)
	})
}

// BenchmarkMatch: a request that matches the last of ten rules.
func BenchmarkMatch(b *testing.B) {
	var rules []string
	for _, m := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"} {
		rules = append(rules, "r-"+m+" model="+m+"-* kind=subagent set_model=x")
	}
	rules = append(rules, "last model=claude-opus-* phase=tool_results set_model=y")
	tb, errs := Parse(rules, nil)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	q := &Request{API: "anthropic", Family: "anthropic", Model: "claude-opus-4-5", Kind: KindMain, Phase: PhaseEdit}
	b.ReportAllocs()
	for b.Loop() {
		if tb.Match(q) == nil {
			b.Fatal("no match")
		}
	}
}
