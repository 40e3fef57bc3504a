package anthropic

import (
	"fmt"
	"strings"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
)

// This file holds the Anthropic TurnCodec: the edits the turn engine and the
// session ledger make to Messages requests and replies.
//
// Conventions shared with the Gemini implementation: a method with nothing
// to do (no items, no results, no texts, no indices) returns its input
// itself, as ApplyEdits does; every other successful call returns a new
// slice. Request bodies are validated like ParseRequest does (errors wrap
// ErrMalformed), reply bodies like ParseReply (ErrMalformedReply).

var _ rewrite.TurnCodec = anthropicCodec{}

func (anthropicCodec) ReplyAsMessages(reply []byte) ([][]byte, error) {
	root, err := rewrite.ParseReplyRoot(reply)
	if err != nil {
		return nil, err
	}
	content := jsonkit.Member(root, "content")
	if !content.IsArray() {
		return nil, fmt.Errorf("%w: content must be an array", rewrite.ErrMalformedReply)
	}
	msg := make([]byte, 0, len(content.Raw)+32)
	msg = append(msg, `{"role":"assistant","content":`...)
	msg = append(msg, content.Raw...)
	return [][]byte{append(msg, '}')}, nil
}

// ToolResultMessages renders one user message of tool_result blocks, in the
// order of results. No results give no message.
func (anthropicCodec) ToolResultMessages(results []conv.ToolResult) ([][]byte, error) {
	if len(results) == 0 {
		return nil, nil
	}
	blocks, err := anthropicResultBlocks(results)
	if err != nil {
		return nil, err
	}
	return [][]byte{anthropicUserMessage(blocks)}, nil
}

// anthropicResultBlocks renders results as tool_result blocks,
// comma-separated.
func anthropicResultBlocks(results []conv.ToolResult) ([]byte, error) {
	var out []byte
	for i, r := range results {
		if r.CallID == "" {
			return nil, fmt.Errorf("rewrite: tool result %d has no call id", i)
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"type":"tool_result","tool_use_id":`...)
		out = jsonkit.AppendString(out, r.CallID)
		out = append(out, `,"content":`...)
		out = jsonkit.AppendString(out, r.Content)
		if r.IsError {
			out = append(out, `,"is_error":true`...)
		}
		out = append(out, '}')
	}
	return out, nil
}

// anthropicUserMessage wraps rendered content blocks in a user message.
func anthropicUserMessage(blocks []byte) []byte {
	msg := make([]byte, 0, len(blocks)+32)
	msg = append(msg, `{"role":"user","content":[`...)
	msg = append(msg, blocks...)
	return append(msg, "]}"...)
}

func (anthropicCodec) AppendMessages(body []byte, items [][]byte) ([]byte, error) {
	return rewrite.BlocksAppendToMember(body, "messages", items)
}

func (anthropicCodec) ReplaceMessages(body []byte, pos int, items [][]byte) ([]byte, error) {
	return rewrite.BlocksReplaceAt(body, "messages", pos, items)
}

// anthropicMessageAt returns the messages array, its elements and the
// message at pos, which must have role want.
func anthropicMessageAt(body []byte, pos int, want string) (gjson.Result, []gjson.Result, gjson.Result, error) {
	_, arr, err := rewrite.BlocksConversation(body, "messages")
	if err != nil {
		return arr, nil, gjson.Result{}, err
	}
	elems := rewrite.BlocksElems(arr)
	msg, err := rewrite.BlocksAt(elems, pos, "messages")
	if err != nil {
		return arr, nil, gjson.Result{}, err
	}
	if r := msg.Get("role"); r.Type != gjson.String || r.Str != want {
		return arr, nil, gjson.Result{}, fmt.Errorf("rewrite: messages[%d] does not have role %q", pos, want)
	}
	return arr, elems, msg, nil
}

// PrependToolResults puts tool_result blocks first in the user message that
// follows the assistant message at pos. String content becomes
// [results…, {"type":"text","text":<the original string literal>}] (the
// text block is left out when the string is blank, since Anthropic rejects
// empty text blocks). Without a user message right after pos, a new user
// message holding only the results is inserted there.
func (anthropicCodec) PrependToolResults(body []byte, pos int, results []conv.ToolResult) ([]byte, error) {
	arr, elems, _, err := anthropicMessageAt(body, pos, "assistant")
	if err != nil {
		return nil, err
	}
	if len(results) == 0 {
		return body, nil
	}
	blocks, err := anthropicResultBlocks(results)
	if err != nil {
		return nil, err
	}
	if pos+1 < len(elems) {
		next := elems[pos+1]
		if r := next.Get("role"); r.Type == gjson.String && r.Str == "user" {
			c := next.Get("content")
			switch {
			case c.Type == gjson.String && strings.TrimSpace(c.Str) == "":
				return jsonkit.Splice(body, c.Index, jsonkit.ValueEnd(c), []byte{'['}, blocks, []byte{']'}), nil
			case c.Type == gjson.String:
				return jsonkit.Splice(body, c.Index, jsonkit.ValueEnd(c), []byte{'['}, blocks,
					[]byte(`,{"type":"text","text":`), []byte(c.Raw), []byte("}]")), nil
			case c.IsArray():
				return jsonkit.PrependElement(body, c, blocks), nil
			case jsonkit.IsNull(c):
				return jsonkit.SetMember(body, next, "content", rewrite.Enclose('[', blocks, ']')), nil
			}
			return nil, fmt.Errorf("%w: messages[%d].content must be a string or an array", rewrite.ErrMalformed, pos+1)
		}
	}
	return rewrite.BlocksInsertBefore(body, arr, elems, pos+1, anthropicUserMessage(blocks)), nil
}

// AppendUserTextAt appends text blocks to the user message at pos, as
// anthropicAppendUser does for the newest one.
func (anthropicCodec) AppendUserTextAt(body []byte, pos int, texts []string) ([]byte, error) {
	_, _, msg, err := anthropicMessageAt(body, pos, "user")
	if err != nil {
		return nil, err
	}
	if len(texts) == 0 {
		return body, nil
	}
	return rewrite.AppendContentParts(body, msg, "content", rewrite.TextItems("text", texts), `{"type":"text","text":`)
}

// EditReply drops and reorders tool_use blocks of the reply's content (other
// blocks, thinking included, keep their bytes and relative order). When
// every tool_use block is removed, a stop_reason of "tool_use" (or a missing
// one) becomes "end_turn"; any other stop reason (max_tokens, pause_turn,
// refusal, ...) is kept, since it still describes how the reply ended.
func (anthropicCodec) EditReply(reply []byte, remove, first []int) ([]byte, error) {
	if len(remove) == 0 && len(first) == 0 {
		return reply, nil
	}
	root, err := rewrite.ParseReplyRoot(reply)
	if err != nil {
		return nil, err
	}
	content := root.Get("content")
	if !content.IsArray() {
		return nil, fmt.Errorf("%w: content must be an array", rewrite.ErrMalformedReply)
	}
	elems := rewrite.BlocksElems(content)
	var calls []int
	for i, b := range elems {
		if b.Get("type").Str == "tool_use" {
			calls = append(calls, i)
		}
	}
	order, left, err := rewrite.BlocksCallOrder(len(elems), calls, remove, first)
	if err != nil {
		return nil, err
	}
	out := rewrite.BlocksReorder(reply, elems, order)
	if left > 0 {
		return out, nil
	}
	if sr := root.Get("stop_reason"); jsonkit.IsNull(sr) || sr.Str == "tool_use" {
		return rewrite.BlocksSetTopMember(out, "stop_reason", []byte(`"end_turn"`))
	}
	return out, nil
}

// MergeReplies appends next's content blocks to first's. id, model, type,
// role and anything else come from first; stop_reason and stop_sequence
// from next (when next has them).
//
// Usage: the usage object is next's (so input_tokens, the cache counts,
// service_tier, ... all describe the last upstream call, whose prompt holds
// the whole conversation including first's output and shepherd's tool
// results: an agent's context-window meter stays right) with output_tokens
// set to first's plus next's (everything the model generated for the
// agent). Input is not summed: the two prompts overlap almost entirely.
// Without a usage object in next, first's is kept unchanged.
func (anthropicCodec) MergeReplies(first, next []byte) ([]byte, error) {
	r1, err := rewrite.ParseReplyRoot(first)
	if err != nil {
		return nil, fmt.Errorf("first reply: %w", err)
	}
	r2, err := rewrite.ParseReplyRoot(next)
	if err != nil {
		return nil, fmt.Errorf("next reply: %w", err)
	}
	c1, c2 := r1.Get("content"), r2.Get("content")
	if !c1.IsArray() {
		return nil, fmt.Errorf("%w: first reply: content must be an array", rewrite.ErrMalformedReply)
	}
	if !c2.IsArray() && !jsonkit.IsNull(c2) {
		return nil, fmt.Errorf("%w: next reply: content must be an array", rewrite.ErrMalformedReply)
	}
	var out []byte
	if inner := rewrite.BlocksInner(c2); inner != "" {
		out = jsonkit.AppendElements(first, c1, []byte(inner))
	} else {
		out = append([]byte(nil), first...)
	}
	return anthropicTakeStopAndUsage(out, r1, r2)
}

// anthropicTakeStopAndUsage gives out (a reply built from r1's) r2's stop
// reason and stop sequence, and r2's usage with the output tokens of both
// summed (input tokens are r2's: its prompt contains r1's).
func anthropicTakeStopAndUsage(out []byte, r1, r2 gjson.Result) ([]byte, error) {
	var err error
	for _, key := range []string{"stop_reason", "stop_sequence"} {
		if v := r2.Get(key); v.Exists() {
			if out, err = rewrite.BlocksSetTopMember(out, key, []byte(v.Raw)); err != nil {
				return nil, err
			}
		}
	}
	if u2 := r2.Get("usage"); u2.IsObject() {
		sum := rewrite.BlocksCount(r1.Get("usage"), "output_tokens") + rewrite.BlocksCount(u2, "output_tokens")
		usage := rewrite.BlocksSetCounts([]byte(u2.Raw), []string{"output_tokens"}, []int64{sum})
		if out, err = rewrite.BlocksSetTopMember(out, "usage", usage); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (anthropicCodec) ConversationKey() string { return conversationMember }

func (anthropicCodec) FillerElem() string { return `{"role":"user","content":""}` }

// SingleElemTurns implements rewrite.SingleElemTurnLocator: each turn is
// the one element at its view position.
func (anthropicCodec) SingleElemTurns() {}

func (c anthropicCodec) UserTurnElems(body []byte) ([]gjson.Result, func(int) (int, int, error), error) {
	return rewrite.SingleElemTurns(c.parsed, body, "messages")
}

// AppendUserTexts is AppendUserTextAt for several turns, batched.
func (c anthropicCodec) AppendUserTexts(body []byte, ops []rewrite.UserTexts) ([]byte, error) {
	return rewrite.AppendUserTextsBatched(c, c, c.parsed, body, ops)
}
