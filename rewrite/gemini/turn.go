package gemini

import (
	"fmt"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
)

// This file holds the Gemini TurnCodec. Model parts are never rebuilt: a
// functionCall part moves or goes whole, with the thoughtSignature beside
// it. Only the first candidate of a reply is used or edited (the one
// ParseReply views). See rewrite/anthropic/turn.go for the conventions on no-op
// calls and errors.

var _ rewrite.TurnCodec = geminiCodec{}

// geminiReplyParts returns candidates[0].content.parts of a reply.
func geminiReplyParts(root gjson.Result) gjson.Result {
	return root.Get("candidates.0.content.parts")
}

func (geminiCodec) ReplyAsMessages(reply []byte) ([][]byte, error) {
	root, err := rewrite.ParseReplyRoot(reply)
	if err != nil {
		return nil, err
	}
	parts := geminiReplyParts(root)
	if !parts.IsArray() {
		return nil, fmt.Errorf("%w: candidates[0].content.parts must be an array", rewrite.ErrMalformedReply)
	}
	msg := make([]byte, 0, len(parts.Raw)+28)
	msg = append(msg, `{"role":"model","parts":`...)
	msg = append(msg, parts.Raw...)
	return [][]byte{append(msg, '}')}, nil
}

// ToolResultMessages renders one user content of functionResponse parts, in
// the order of results: {"functionResponse":{"id"?,"name","response":
// {"content":text}}}, or {"error":text} for a refusal. No results give no
// content.
func (geminiCodec) ToolResultMessages(results []conv.ToolResult) ([][]byte, error) {
	if len(results) == 0 {
		return nil, nil
	}
	parts, err := geminiResultParts(results)
	if err != nil {
		return nil, err
	}
	return [][]byte{geminiUserContent(parts)}, nil
}

// geminiResultParts renders results as functionResponse parts,
// comma-separated.
func geminiResultParts(results []conv.ToolResult) ([]byte, error) {
	var out []byte
	for i, r := range results {
		if r.Name == "" {
			return nil, fmt.Errorf("rewrite: tool result %d has no tool name", i)
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"functionResponse":{`...)
		if r.CallID != "" {
			out = append(out, `"id":`...)
			out = jsonkit.AppendString(out, r.CallID)
			out = append(out, ',')
		}
		out = append(out, `"name":`...)
		out = jsonkit.AppendString(out, r.Name)
		if r.IsError {
			out = append(out, `,"response":{"error":`...)
		} else {
			out = append(out, `,"response":{"content":`...)
		}
		out = jsonkit.AppendString(out, r.Content)
		out = append(out, "}}}"...)
	}
	return out, nil
}

// geminiUserContent wraps rendered parts in a user content.
func geminiUserContent(parts []byte) []byte {
	msg := make([]byte, 0, len(parts)+28)
	msg = append(msg, `{"role":"user","parts":[`...)
	msg = append(msg, parts...)
	return append(msg, "]}"...)
}

func (geminiCodec) AppendMessages(body []byte, items [][]byte) ([]byte, error) {
	return rewrite.BlocksAppendToMember(body, "contents", items)
}

func (geminiCodec) ReplaceMessages(body []byte, pos int, items [][]byte) ([]byte, error) {
	return rewrite.BlocksReplaceAt(body, "contents", pos, items)
}

// geminiContentAt returns the contents array, its elements and the content
// AtField pos.
func geminiContentAt(body []byte, pos int) (gjson.Result, []gjson.Result, gjson.Result, error) {
	_, arr, err := rewrite.BlocksConversation(body, "contents")
	if err != nil {
		return arr, nil, gjson.Result{}, err
	}
	elems := rewrite.BlocksElems(arr)
	c, err := rewrite.BlocksAt(elems, pos, "contents")
	if err != nil {
		return arr, nil, gjson.Result{}, err
	}
	if !c.IsObject() {
		return arr, nil, gjson.Result{}, fmt.Errorf("%w: contents[%d] must be an object", rewrite.ErrMalformed, pos)
	}
	return arr, elems, c, nil
}

// geminiIsModel reports whether content c has role "model".
func geminiIsModel(c gjson.Result) bool {
	r := c.Get("role")
	return r.Type == gjson.String && r.Str == "model"
}

// PrependToolResults puts functionResponse parts first in the content that
// follows the model content at pos, whatever its role unless it is another
// model turn (user, missing, or the older "function"). Otherwise a new user
// content holding only the results is inserted after pos.
func (geminiCodec) PrependToolResults(body []byte, pos int, results []conv.ToolResult) ([]byte, error) {
	arr, elems, c, err := geminiContentAt(body, pos)
	if err != nil {
		return nil, err
	}
	if !geminiIsModel(c) {
		return nil, fmt.Errorf("rewrite: contents[%d] does not have role \"model\"", pos)
	}
	if len(results) == 0 {
		return body, nil
	}
	parts, err := geminiResultParts(results)
	if err != nil {
		return nil, err
	}
	if pos+1 < len(elems) {
		if next := elems[pos+1]; next.IsObject() && !geminiIsModel(next) {
			p := next.Get("parts")
			switch {
			case p.IsArray():
				return jsonkit.PrependElement(body, p, parts), nil
			case jsonkit.IsNull(p):
				return jsonkit.SetMember(body, next, "parts", rewrite.Enclose('[', parts, ']')), nil
			}
			return nil, fmt.Errorf("%w: contents[%d].parts must be an array", rewrite.ErrMalformed, pos+1)
		}
	}
	return rewrite.BlocksInsertBefore(body, arr, elems, pos+1, geminiUserContent(parts)), nil
}

// AppendUserTextAt appends text parts to the content at pos, as
// geminiAppendUser does for the newest user content. The content may have
// any role but "model": user, none (which counts as the user's), or the
// older "function" (which the request view calls a tool message).
func (geminiCodec) AppendUserTextAt(body []byte, pos int, texts []string) ([]byte, error) {
	_, _, c, err := geminiContentAt(body, pos)
	if err != nil {
		return nil, err
	}
	if geminiIsModel(c) {
		return nil, fmt.Errorf("rewrite: contents[%d] is a model content", pos)
	}
	if len(texts) == 0 {
		return body, nil
	}
	return geminiAppendParts(body, c, geminiTextParts(texts))
}

// EditReply drops and reorders functionCall parts of candidates[0]; each
// part is kept raw, so a thoughtSignature on it moves with it. finishReason
// is left alone: Gemini reports STOP for function calls already.
func (geminiCodec) EditReply(reply []byte, remove, first []int) ([]byte, error) {
	if len(remove) == 0 && len(first) == 0 {
		return reply, nil
	}
	root, err := rewrite.ParseReplyRoot(reply)
	if err != nil {
		return nil, err
	}
	parts := geminiReplyParts(root)
	if !parts.IsArray() {
		return nil, fmt.Errorf("%w: candidates[0].content.parts must be an array", rewrite.ErrMalformedReply)
	}
	elems := rewrite.BlocksElems(parts)
	var calls []int
	for i, p := range elems {
		if fc, _ := either(p, "functionCall", "function_call"); fc.IsObject() {
			calls = append(calls, i)
		}
	}
	order, _, err := rewrite.BlocksCallOrder(len(elems), calls, remove, first)
	if err != nil {
		return nil, err
	}
	return rewrite.BlocksReorder(reply, elems, order), nil
}

// MergeReplies appends next's candidates[0] parts to first's. Everything
// else comes from first (responseId, modelVersion, safety ratings, ...)
// except finishReason, taken from next's candidate when it has one.
//
// usageMetadata is next's (promptTokenCount, cached and tool-use prompt
// counts, details: the last upstream call's prompt holds the whole
// conversation) with candidatesTokenCount and thoughtsTokenCount (when
// either reply has it) summed over both replies, and totalTokenCount
// recomputed as promptTokenCount + toolUsePromptTokenCount +
// candidatesTokenCount + thoughtsTokenCount. Without usageMetadata in next,
// first's is kept unchanged.
func (geminiCodec) MergeReplies(first, next []byte) ([]byte, error) {
	r1, r2, p1, p2, err := geminiReplyPair(first, next)
	if err != nil {
		return nil, err
	}
	var out []byte
	if inner := rewrite.BlocksInner(p2); inner != "" {
		out = jsonkit.AppendElements(first, p1, []byte(inner))
	} else {
		out = append([]byte(nil), first...)
	}
	if fr, _ := either(r2.Get("candidates.0"), "finishReason", "finish_reason"); fr.Exists() {
		root, ok := jsonkit.RootObject(jsonkit.UnsafeString(out))
		if !ok {
			return nil, rewrite.ErrNotObject
		}
		cand := root.Get("candidates.0")
		old, key := either(cand, "finishReason", "finish_reason")
		if !old.Exists() {
			key = "finishReason"
		}
		out = jsonkit.SetMember(out, cand, key, []byte(fr.Raw))
	}
	if u2 := r2.Get("usageMetadata"); u2.IsObject() {
		u1 := r1.Get("usageMetadata")
		cands := rewrite.BlocksCount(u1, "candidatesTokenCount") + rewrite.BlocksCount(u2, "candidatesTokenCount")
		thoughts := rewrite.BlocksCount(u1, "thoughtsTokenCount") + rewrite.BlocksCount(u2, "thoughtsTokenCount")
		total := rewrite.BlocksCount(u2, "promptTokenCount") + rewrite.BlocksCount(u2, "toolUsePromptTokenCount") + cands + thoughts
		keys := []string{"candidatesTokenCount"}
		vals := []int64{cands}
		if u1.Get("thoughtsTokenCount").Exists() || u2.Get("thoughtsTokenCount").Exists() {
			keys, vals = append(keys, "thoughtsTokenCount"), append(vals, thoughts)
		}
		keys, vals = append(keys, "totalTokenCount"), append(vals, total)
		usage := rewrite.BlocksSetCounts([]byte(u2.Raw), keys, vals)
		if out, err = rewrite.BlocksSetTopMember(out, "usageMetadata", usage); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// geminiReplyPair parses two complete replies for MergeReplies and
// ContinueReply: both roots and both candidates' parts (first's an array,
// next's an array or absent).
func geminiReplyPair(first, next []byte) (r1, r2, p1, p2 gjson.Result, err error) {
	if r1, err = rewrite.ParseReplyRoot(first); err != nil {
		return r1, r2, p1, p2, fmt.Errorf("first reply: %w", err)
	}
	if r2, err = rewrite.ParseReplyRoot(next); err != nil {
		return r1, r2, p1, p2, fmt.Errorf("next reply: %w", err)
	}
	p1, p2 = geminiReplyParts(r1), geminiReplyParts(r2)
	if !p1.IsArray() {
		return r1, r2, p1, p2, fmt.Errorf("%w: first reply: candidates[0].content.parts must be an array", rewrite.ErrMalformedReply)
	}
	if !p2.IsArray() && !jsonkit.IsNull(p2) {
		return r1, r2, p1, p2, fmt.Errorf("%w: next reply: candidates[0].content.parts must be an array", rewrite.ErrMalformedReply)
	}
	return r1, r2, p1, p2, nil
}

func (geminiCodec) ConversationKey() string { return conversationMember }

func (geminiCodec) FillerElem() string { return `{"role":"user","parts":[]}` }

// SingleElemTurns implements rewrite.SingleElemTurnLocator: each turn is
// the one element at its view position.
func (geminiCodec) SingleElemTurns() {}

func (c geminiCodec) UserTurnElems(body []byte) ([]gjson.Result, func(int) (int, int, error), error) {
	return rewrite.SingleElemTurns(c.parsed, body, "contents")
}

// AppendUserTexts is AppendUserTextAt for several turns, batched.
func (c geminiCodec) AppendUserTexts(body []byte, ops []rewrite.UserTexts) ([]byte, error) {
	return rewrite.AppendUserTextsBatched(c, c, c.parsed, body, ops)
}
