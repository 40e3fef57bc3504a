package compaction

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// charsPerToken is the size estimate's characters per token.
const charsPerToken = 4

// minKept is the fewest characters worth keeping of a result: a result the
// epoch's remaining budget cannot give this many becomes a stub.
const minKept = 200

// result is one tool-result block of the request view.
type result struct {
	msg, block int
	// chars is the result's length in characters as the agent sent it.
	chars int
	// compacted is the length the model sees when an earlier epoch
	// compacted it, -1 otherwise.
	compacted int
}

// pos is a block position of the view.
type pos struct{ msg, block int }

// toolResults lists the view's tool results in order. compacted maps the
// positions earlier epochs compacted to the length of their stored text.
func toolResults(msgs []conv.Message, compacted map[pos]int) []result {
	var out []result
	for m := range msgs {
		for b := range msgs[m].Blocks {
			blk := &msgs[m].Blocks[b]
			if blk.Kind != conv.BlockToolResult {
				continue
			}
			r := result{msg: m, block: b, chars: utf8.RuneCountInString(blk.Text), compacted: -1}
			if c, ok := compacted[pos{m, b}]; ok {
				r.compacted = c
			}
			out = append(out, r)
		}
	}
	return out
}

// estimateTokens is the request's size as the model sees it: characters /
// charsPerToken of the system prompt and of every block's text (thinking
// included), tool call arguments and tool results, a compacted result at
// its compacted length.
func estimateTokens(req *conv.Request, compacted map[pos]int) int {
	chars := utf8.RuneCountInString(req.System)
	for m := range req.Messages {
		for b := range req.Messages[m].Blocks {
			blk := &req.Messages[m].Blocks[b]
			switch blk.Kind {
			case conv.BlockToolResult:
				if c, ok := compacted[pos{m, b}]; ok {
					chars += c
					continue
				}
				chars += utf8.RuneCountInString(blk.Text)
			case conv.BlockToolCall:
				chars += utf8.RuneCount(blk.Args)
			default:
				chars += utf8.RuneCountInString(blk.Text)
			}
		}
	}
	return chars / charsPerToken
}

// candidates are the results an epoch may compact, oldest first: not among
// the newest keepRecent results, not in the latest round (the messages
// after the last assistant message: the results the model has not seen
// yet), not compacted by an earlier epoch, and longer than itemChars.
func candidates(msgs []conv.Message, results []result, keepRecent, itemChars int) []result {
	round := lastRound(msgs)
	end := max(len(results)-keepRecent, 0)
	var out []result
	for _, r := range results[:end] {
		if r.msg >= round || r.compacted >= 0 || r.chars <= itemChars {
			continue
		}
		out = append(out, r)
	}
	return out
}

// candidateChars is the characters of cands together: the most an epoch
// compacting them could save.
func candidateChars(cands []result) int {
	n := 0
	for _, c := range cands {
		n += c.chars
	}
	return n
}

// lastRound is the index of the first message after the last assistant
// message (len(msgs) when the view ends with one, 0 when it has none).
func lastRound(msgs []conv.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == conv.RoleAssistant {
			return i + 1
		}
	}
	return 0
}

// latestUserText is the text of the newest user message that has any (its
// text blocks joined; tool results are not user text).
func latestUserText(msgs []conv.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != conv.RoleUser {
			continue
		}
		var parts []string
		for _, b := range msgs[i].Blocks {
			if b.Kind == conv.BlockText && strings.TrimSpace(b.Text) != "" {
				parts = append(parts, b.Text)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "\n")
		}
	}
	return ""
}

// planned is a candidate with the characters the epoch keeps of it.
type planned struct {
	result
	keep int
}

// plan ranks the candidates by BM25 relevance to query (ties: the newer
// first) and gives each, in that order, up to itemChars characters of the
// epoch's totalChars; one the rest of the budget cannot give minKept
// characters (or all of it, when itemChars is smaller) keeps nothing (a
// stub). The plan lists the candidates in their order in the view.
func plan(query string, cands []result, texts []string, itemChars, totalChars int) []planned {
	scores := scoreBM25(query, texts)
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(scores[b], scores[a]); c != 0 {
			return c
		}
		return cmp.Compare(b, a) // newer first
	})
	out := make([]planned, len(cands))
	left := totalChars
	for _, i := range order {
		keep := min(itemChars, left)
		if keep < min(minKept, itemChars) {
			keep = 0
		}
		left -= keep
		out[i] = planned{result: cands[i], keep: keep}
	}
	return out
}

// toolNames maps call ids to the tool names of the view's tool calls, for
// results whose block does not name its tool.
func toolNames(msgs []conv.Message) map[string]string {
	names := map[string]string{}
	for m := range msgs {
		for _, b := range msgs[m].Blocks {
			if b.Kind == conv.BlockToolCall && b.ToolCallID != "" {
				names[b.ToolCallID] = b.ToolName
			}
		}
	}
	return names
}
