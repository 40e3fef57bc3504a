package compaction

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// Builders of request views.

func user(text string) conv.Message {
	return conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{{Kind: conv.BlockText, Text: text}}}
}

func assistantCalls(ids ...string) conv.Message {
	m := conv.Message{Role: conv.RoleAssistant}
	for _, id := range ids {
		m.Blocks = append(m.Blocks, conv.Block{Kind: conv.BlockToolCall, ToolCallID: id, ToolName: "Read", Args: []byte(`{"path":"` + id + `"}`)})
	}
	return m
}

func resultBlock(id, text string) conv.Block {
	return conv.Block{Kind: conv.BlockToolResult, ToolCallID: id, Text: text}
}

func results(blocks ...conv.Block) conv.Message {
	return conv.Message{Role: conv.RoleUser, Blocks: blocks}
}

// toolLoop is a view: the user's question, then rounds of one call and its
// result each, result i of size[i] characters.
func toolLoop(question string, size ...int) []conv.Message {
	msgs := []conv.Message{user(question)}
	for i, n := range size {
		id := fmt.Sprintf("c%d", i)
		msgs = append(msgs, assistantCalls(id), results(resultBlock(id, strings.Repeat("r", n))))
	}
	return msgs
}

func TestCandidates(t *testing.T) {
	positions := func(rs []result) []int {
		var out []int
		for _, r := range rs {
			out = append(out, r.msg)
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		msgs       []conv.Message
		compacted  map[pos]int
		keepRecent int
		want       []int // message indices of the candidates
	}{
		{"the newest keep_recent results stay", toolLoop("q", 2000, 2000, 2000, 2000, 2000), nil, 2, []int{2, 4, 6}},
		{"keep_recent 0 still spares the latest round", toolLoop("q", 2000, 2000, 2000), nil, 0, []int{2, 4}},
		{"short results stay", toolLoop("q", 2000, 1500, 100, 2000, 2000), nil, 1, []int{2, 8}},
		{"results compacted before stay", toolLoop("q", 2000, 2000, 2000, 2000), map[pos]int{{2, 0}: 50}, 1, []int{4, 6}},
		{"fewer results than keep_recent", toolLoop("q", 5000, 5000), nil, 4, nil},
		{"no results", []conv.Message{user("q")}, nil, 0, nil},
		{
			"a round of several results is spared whole",
			append(toolLoop("q", 3000), assistantCalls("a", "b", "c"),
				results(resultBlock("a", strings.Repeat("x", 3000)), resultBlock("b", strings.Repeat("x", 3000)), resultBlock("c", strings.Repeat("x", 3000)))),
			nil, 1, []int{2},
		},
		{
			"a view ending with an assistant message has no unseen round",
			append(toolLoop("q", 3000, 3000), conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{{Kind: conv.BlockText, Text: "prefill"}}}),
			nil, 0, []int{2, 4},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := toolResults(tc.msgs, tc.compacted)
			require.Equal(t, tc.want, positions(candidates(tc.msgs, rs, tc.keepRecent, 1500)))
		})
	}
}

func TestEstimateTokens(t *testing.T) {
	req := &conv.Request{System: strings.Repeat("s", 400), Messages: []conv.Message{
		user(strings.Repeat("u", 400)),
		{Role: conv.RoleAssistant, Blocks: []conv.Block{
			{Kind: conv.BlockThinking, Text: strings.Repeat("t", 400)},
			{Kind: conv.BlockToolCall, ToolCallID: "c", ToolName: "Read", Args: []byte(strings.Repeat("a", 400))},
		}},
		results(resultBlock("c", strings.Repeat("é", 4000))),
	}}
	require.Equal(t, 100+100+100+100+1000, estimateTokens(req, nil), "characters, not bytes, / 4")
	require.Equal(t, 400+50, estimateTokens(req, map[pos]int{{2, 0}: 200}), "a compacted result counts at its compacted size")
}

func TestLatestUserText(t *testing.T) {
	msgs := []conv.Message{
		user("first question"),
		assistantCalls("c1"),
		{Role: conv.RoleUser, Blocks: []conv.Block{resultBlock("c1", "result text"), {Kind: conv.BlockText, Text: "  "}}},
		user("second question"),
		assistantCalls("c2"),
		results(resultBlock("c2", "more results")),
		{Role: conv.RoleTool, Blocks: []conv.Block{resultBlock("c3", "chat tool message")}},
	}
	require.Equal(t, "second question", latestUserText(msgs))
	require.Equal(t, "first question", latestUserText(msgs[:3]))
	mixed := conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{resultBlock("c", "x"), {Kind: conv.BlockText, Text: "why?"}, {Kind: conv.BlockText, Text: "and how?"}}}
	require.Equal(t, "why?\nand how?", latestUserText([]conv.Message{mixed}))
	require.Empty(t, latestUserText([]conv.Message{assistantCalls("c")}))
}

func TestPlanBudget(t *testing.T) {
	cands := []result{{msg: 1}, {msg: 3}, {msg: 5}, {msg: 7}}
	texts := []string{"alpha", "parseConfig fails", "beta", "gamma"}
	keeps := func(ps []planned) []int {
		var out []int
		for _, p := range ps {
			out = append(out, p.keep)
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		query       string
		item, total int
		want        []int // kept characters, in view order
	}{
		{"the most relevant first, then the newest", "parseConfig", 1500, 3200, []int{0, 1500, 200, 1500}},
		{"no query: the newest first", "", 1500, 3200, []int{0, 200, 1500, 1500}},
		{"a remainder under 200 characters gives a stub", "", 1500, 3100, []int{0, 0, 1500, 1500}},
		{"the whole budget fits", "", 1500, 100000, []int{1500, 1500, 1500, 1500}},
		{"no budget: all stubs", "parseConfig", 1500, 0, []int{0, 0, 0, 0}},
		{"an item limit under 200 is kept whole while it fits", "", 150, 400, []int{0, 0, 150, 150}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := plan(tc.query, cands, texts, tc.item, tc.total)
			require.Equal(t, tc.want, keeps(got))
			for i, p := range got {
				require.Equal(t, cands[i].msg, p.msg, "the plan keeps the view's order")
			}
		})
	}
}
