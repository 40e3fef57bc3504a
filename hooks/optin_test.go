package hooks

import (
	"slices"
	"testing"
)

func TestParseFeatures(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"compaction", []string{"compaction"}},
		{" Compaction , ,FORMAT,", []string{"compaction", "format"}},
	} {
		if got := ParseFeatures([]byte(c.in)); !slices.Equal(got, c.want) {
			t.Errorf("ParseFeatures(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestScope(t *testing.T) {
	chat := API{Key: "openai_chat"}
	gem := API{Key: "gemini"}
	opted := &Call{Features: []string{"format"}}
	plain := &Call{}
	for _, c := range []struct {
		name        string
		s           Scope
		off         bool
		joinsChat   bool
		joinsGemini bool
		activeOpted bool
		activePlain bool
	}{
		{"default", Scope{}, true, false, false, false, false},
		{"false", Scope{Enabled: OptInOff}, true, false, false, false, false},
		{"true", Scope{Enabled: OptInOn}, false, true, true, true, true},
		{"header", Scope{Enabled: OptInHeader}, false, true, true, true, false},
		{"one api", Scope{Enabled: OptInOn, APIs: []string{"gemini"}}, false, false, true, true, true},
	} {
		if got := c.s.Off(); got != c.off {
			t.Errorf("%s: Off = %v", c.name, got)
		}
		if got := c.s.Joins(chat); got != c.joinsChat {
			t.Errorf("%s: Joins(chat) = %v", c.name, got)
		}
		if got := c.s.Joins(gem); got != c.joinsGemini {
			t.Errorf("%s: Joins(gemini) = %v", c.name, got)
		}
		if got := c.s.Active(opted, "format"); got != c.activeOpted {
			t.Errorf("%s: Active(opted) = %v", c.name, got)
		}
		if got := c.s.Active(plain, "format"); got != c.activePlain {
			t.Errorf("%s: Active(plain) = %v", c.name, got)
		}
	}
}

func TestScopeValidate(t *testing.T) {
	var p Problems
	Scope{Enabled: "sometimes", APIs: []string{"anthropic", "claude"}}.Validate("format", &p)
	if len(p) != 2 || p[0].Key != "format.enabled" || p[1].Key != "format.apis" {
		t.Fatalf("problems = %+v", p)
	}
	p = nil
	Scope{Enabled: OptInHeader, APIs: KnownAPIs}.Validate("format", &p)
	if len(p) != 0 {
		t.Fatalf("problems = %+v", p)
	}
}

func TestDefer(t *testing.T) {
	var c Call
	c.Defer(nil)
	c.Defer(nil)
	if got := len(c.TakeDeferred()); got != 2 {
		t.Fatalf("TakeDeferred = %d changes, want 2", got)
	}
	if got := len(c.TakeDeferred()); got != 0 {
		t.Fatalf("second TakeDeferred = %d changes, want 0", got)
	}
}

type namedHook string

func (h namedHook) Name() string { return string(h) }

func TestScopePlugin(t *testing.T) {
	p := Scope{Enabled: OptInOn, APIs: []string{"gemini"}}.Plugin(namedHook("f"))
	if h, err := p.Hook(API{Key: "gemini"}); err != nil || h == nil || h.Name() != "f" {
		t.Fatalf("gemini chain: %v, %v", h, err)
	}
	if h, err := p.Hook(API{Key: "anthropic"}); err != nil || h != nil {
		t.Fatalf("anthropic chain: %v, %v", h, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
