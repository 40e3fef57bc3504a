package format

import (
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// BenchmarkOnRequest: three rules against a 4 KB prompt none matches (the
// cost every prompt pays).
func BenchmarkOnRequest(b *testing.B) {
	rules, errs := ParseRules([]string{
		`summary match=(?i)\bsummar(y|ise|ize)\b words=120 bullets=5`,
		`list match=(?i)^list words=80 bullets=8 order=importance`,
		`why match=(?i)^why text="Answer in one sentence."`,
	})
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	h := New(Options{Scope: hooks.Scope{Enabled: hooks.OptInOn}, Rules: rules})
	req := &conv.Request{Messages: []conv.Message{msg(conv.RoleUser, text(strings.Repeat("fix the failing test in the parser ", 120)))}}
	call := &hooks.Call{}
	b.ReportAllocs()
	for b.Loop() {
		if e, _, _ := h.OnRequest(b.Context(), call, req); !e.Empty() {
			b.Fatal("matched")
		}
	}
}
