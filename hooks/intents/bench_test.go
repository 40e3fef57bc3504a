package intents

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/hooks/intents/policy"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// BenchmarkIntentsOnReply measures the governance checks on a reply of four
// calls (a read, two in-scope edits, one out-of-scope write) under an active
// intent with patterns and globs: the per-reply cost intents adds.
func BenchmarkIntentsOnReply(b *testing.B) {
	p, err := policy.Parse([]byte(intentsYAML), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	pa, _ := policy.ParsePathArgs([]string{"Write:file_path", "Edit:file_path"})
	h := New(Options{Policy: func() *policy.Policy { return p }, Root: "/work/app",
		AlwaysAllowed: []string{"Read"}, PathArgs: pa})
	content := strings.Repeat("func f() { return }\n", 200) // ~4 KB of code per edit
	reply := &conv.Reply{ToolCalls: []conv.ToolCall{
		{Index: 0, ID: "a", Name: "Read", Args: []byte(`{"file_path":"/work/app/src/a.go"}`)},
		{Index: 1, ID: "b", Name: "Edit", Args: []byte(fmt.Sprintf(`{"file_path":"/work/app/src/a.go","old_string":%q,"new_string":%q}`, content, content))},
		{Index: 2, ID: "c", Name: "Write", Args: []byte(fmt.Sprintf(`{"file_path":"src/b.go","content":%q}`, content))},
		{Index: 3, ID: "d", Name: "Write", Args: []byte(`{"file_path":"/etc/passwd","content":"x"}`)},
	}}
	call := &hooks.Call{Session: sessionWith("INT-001", 3), Request: &conv.Request{}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.OnReply(context.Background(), call, reply); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnchors measures anchoring a 40-message conversation whose
// assistant turns carry tool calls with ~4 KB arguments.
func BenchmarkAnchors(b *testing.B) {
	content := strings.Repeat("func f() { return }\n", 200)
	var msgs []conv.Message
	for i := range 20 {
		msgs = append(msgs,
			conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{{Kind: conv.BlockText, Text: fmt.Sprintf("step %d", i)}}},
			conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{{Kind: conv.BlockToolCall, ToolCallID: fmt.Sprint(i), ToolName: "Write",
				Args: []byte(fmt.Sprintf(`{"file_path":"src/%d.go","content":%q}`, i, content))}}})
	}
	b.ReportAllocs()
	for b.Loop() {
		conv.Anchors(msgs)
	}
}
