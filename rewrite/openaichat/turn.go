package openaichat

import (
	"fmt"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
)

// This file holds the Chat Completions side of TurnCodec. A view position
// is the index in messages (system and developer messages included). An
// edit with nothing to do (no items, texts, results, or calls to drop or
// move) returns its input itself, as ApplyEdits does; every other
// successful call returns a new slice.

var _ rewrite.TurnCodec = chatCodec{}

// chatMessages reads the messages array of a request body for a positional
// edit; it is empty when messages is absent or null.
func chatMessages(body []byte) (root, msgs gjson.Result, elems []gjson.Result, err error) {
	if root, err = rewrite.ParseTrustedRoot(body); err != nil {
		return
	}
	msgs = jsonkit.Member(root, "messages")
	if err = rewrite.WantArray(msgs, "messages"); err != nil {
		return
	}
	return root, msgs, rewrite.BlocksElems(msgs), nil
}

// ReplyAsMessages returns choice 0's message as one assistant message:
// {"role":"assistant","content":…} with content's raw bytes (null when
// absent), then, each raw and only when set: refusal (a non-null string; it
// is an assistant input field too), reasoning_content (a non-empty string:
// backends that emit it, such as DeepSeek, expect it back within a tool-call
// loop; OpenAI never sends it), tool_calls (non-empty: the API rejects an
// empty list) and the deprecated function_call. Everything else is dropped:
// "refusal": null, annotations (reply-only), audio (its input form is
// {"id"} alone) and any unknown member.
func (chatCodec) ReplyAsMessages(reply []byte) ([][]byte, error) {
	root, err := rewrite.ParseReplyRoot(reply)
	if err != nil {
		return nil, err
	}
	msg := jsonkit.Member(firstChoice(jsonkit.Member(root, "choices")), "message")
	if !msg.IsObject() {
		return nil, fmt.Errorf("%w: no choices[0].message object", rewrite.ErrMalformedReply)
	}
	out := append([]byte(nil), `{"role":"assistant","content":`...)
	var m [5]gjson.Result // one pass over the message; only raw values are read
	jsonkit.MembersRaw(msg, replyMessageKeys, m[:])
	if c := m[0]; jsonkit.IsNull(c) {
		out = append(out, "null"...)
	} else {
		out = append(out, c.Raw...)
	}
	if r := m[1]; r.Type == gjson.String {
		out = append(out, `,"refusal":`...)
		out = append(out, r.Raw...)
	}
	if rc := m[2]; rc.Type == gjson.String && rc.Raw != `""` {
		out = append(out, `,"reasoning_content":`...)
		out = append(out, rc.Raw...)
	}
	calls := m[3]
	switch {
	case calls.IsArray():
		if len(rewrite.BlocksElems(calls)) > 0 {
			out = append(out, `,"tool_calls":`...)
			out = append(out, calls.Raw...)
		}
	case !jsonkit.IsNull(calls):
		return nil, fmt.Errorf("%w: choices[0].message.tool_calls is not an array", rewrite.ErrMalformedReply)
	}
	if fc := m[4]; fc.IsObject() {
		out = append(out, `,"function_call":`...)
		out = append(out, fc.Raw...)
	}
	return [][]byte{append(out, '}')}, nil
}

// replyMessageKeys are the members ReplyAsMessages reads of the message.
var replyMessageKeys = []string{"content", "refusal", "reasoning_content", "tool_calls", "function_call"}

// ToolResultMessages renders one {"role":"tool","tool_call_id","content"}
// message per result. Chat has no error flag: a refusal's text says so.
func (chatCodec) ToolResultMessages(results []conv.ToolResult) ([][]byte, error) {
	items := make([][]byte, 0, len(results))
	for i, r := range results {
		if r.CallID == "" {
			return nil, fmt.Errorf("rewrite: tool result %d has no call id", i)
		}
		b := append([]byte(nil), `{"role":"tool","tool_call_id":`...)
		b = jsonkit.AppendString(b, r.CallID)
		b = append(b, `,"content":`...)
		b = jsonkit.AppendString(b, r.Content)
		items = append(items, append(b, '}'))
	}
	return items, nil
}

// AppendMessages appends items to messages (creating it when absent).
func (chatCodec) AppendMessages(body []byte, items [][]byte) ([]byte, error) {
	if _, _, _, err := chatMessages(body); err != nil {
		return nil, err
	}
	if err := rewrite.OpenAICheckItems(items); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return body, nil
	}
	return rewrite.AppendToArrayMember(body, "messages", rewrite.OpenAIJoin(items))
}

func (chatCodec) ReplaceMessages(body []byte, pos int, items [][]byte) ([]byte, error) {
	_, msgs, elems, err := chatMessages(body)
	if err != nil {
		return nil, err
	}
	if pos < 0 || pos >= len(elems) {
		return nil, rewrite.OpenAIPosErr(pos, len(elems))
	}
	if err := rewrite.OpenAICheckItems(items); err != nil {
		return nil, err
	}
	return rewrite.OpenAISpliceElems(body, msgs, elems, pos, pos+1, items), nil
}

// PrependToolResults inserts one tool message per result right after the
// assistant message at pos, ahead of the agent's own tool messages.
func (c chatCodec) PrependToolResults(body []byte, pos int, results []conv.ToolResult) ([]byte, error) {
	_, msgs, elems, err := chatMessages(body)
	if err != nil {
		return nil, err
	}
	if pos < 0 || pos >= len(elems) {
		return nil, rewrite.OpenAIPosErr(pos, len(elems))
	}
	if r := elems[pos].Get("role").Str; r != "assistant" {
		return nil, fmt.Errorf("rewrite: message %d is not an assistant message", pos)
	}
	items, err := c.ToolResultMessages(results)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return body, nil
	}
	return rewrite.OpenAISpliceElems(body, msgs, elems, pos+1, pos+1, items), nil
}

// AppendUserTextAt appends text parts to the user message at pos (string
// content becomes parts, the original first), as ApplyEdits does for the
// newest one. When pos is a tool message, a new user message goes after the
// run of tool messages that pos belongs to, so results stay right after
// their calls.
func (chatCodec) AppendUserTextAt(body []byte, pos int, texts []string) ([]byte, error) {
	_, msgs, elems, err := chatMessages(body)
	if err != nil {
		return nil, err
	}
	if pos < 0 || pos >= len(elems) {
		return nil, rewrite.OpenAIPosErr(pos, len(elems))
	}
	if len(texts) == 0 {
		return body, nil
	}
	m := elems[pos]
	switch {
	case m.IsObject() && m.Get("role").Str == "user":
		return rewrite.AppendContentParts(body, m, "content", rewrite.TextItems("text", texts), `{"type":"text","text":`)
	case chatIsTool(m):
		j := chatToolRunEnd(elems, pos)
		return rewrite.OpenAISpliceElems(body, msgs, elems, j, j, [][]byte{chatTextMessage("user", texts)}), nil
	}
	return nil, fmt.Errorf("rewrite: message %d is neither a user nor a tool message", pos)
}

// EditReply drops and reorders entries of choice 0's tool_calls (indices as
// ParseReply numbers them), reusing the separators between the original
// entries. When every call is removed the tool_calls member is deleted (as
// OpenAI omits it when there are none; an empty list is rejected on input)
// and finish_reason becomes "stop".
func (chatCodec) EditReply(reply []byte, remove, first []int) ([]byte, error) {
	if len(remove) == 0 && len(first) == 0 {
		return reply, nil
	}
	root, err := rewrite.ParseReplyRoot(reply)
	if err != nil {
		return nil, err
	}
	choice := firstChoice(root.Get("choices"))
	msg := choice.Get("message")
	calls := rewrite.BlocksElems(msg.Get("tool_calls"))
	order, err := rewrite.OpenAICallOrder(len(calls), remove, first)
	if err != nil {
		return nil, err
	}
	if len(order) > 0 {
		return rewrite.OpenAIReorderElems(reply, calls, order), nil
	}
	// Every call removed. finish_reason comes after message in every reply
	// seen, but edit the later spot first so earlier offsets stay valid. A
	// reason other than a tool-call one (length: cut by the limit) is true
	// of the edited reply too and stays.
	fr := choice.Get("finish_reason")
	if !jsonkit.IsNull(fr) && fr.Str != "tool_calls" && fr.Str != "function_call" {
		return rewrite.OpenAIDeleteMember(reply, msg, "tool_calls"), nil
	}
	if fr.Index > msg.Index {
		out := jsonkit.SetMember(reply, choice, "finish_reason", []byte(`"stop"`))
		return rewrite.OpenAIDeleteMember(out, msg, "tool_calls"), nil
	}
	out := rewrite.OpenAIDeleteMember(reply, msg, "tool_calls")
	root, _ = jsonkit.RootObject(jsonkit.UnsafeString(out))
	return jsonkit.SetMember(out, firstChoice(root.Get("choices")), "finish_reason", []byte(`"stop"`)), nil
}

// chatUsageKeys names Chat's usage members.
var chatUsageKeys = rewrite.OpenAIUsageKeys{In: "prompt_tokens", Out: "completion_tokens", Total: "total_tokens",
	Details: "completion_tokens_details", Reasoning: "reasoning_tokens"}

// MergeReplies returns first with next's turn appended to choice 0: content,
// refusal and reasoning_content concatenated (strings inside one literal,
// byte for byte; null or absent on either side gives the other), next's
// tool_calls after first's (they carry no index in a complete reply),
// finish_reason from next, and usage from next with completion_tokens (and
// completion_tokens_details.reasoning_tokens) summed and total_tokens
// recomputed; prompt_tokens stays next's, whose prompt holds the whole
// conversation. Everything else (id, created, model) is first's.
func (chatCodec) MergeReplies(first, next []byte) ([]byte, error) {
	_, nroot, nchoice, nmsg, err := chatReplyPair(first, next)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), first...)
	// cur re-reads choice 0 of out after each splice.
	cur := func() (root, choice, msg gjson.Result) {
		root, _ = jsonkit.RootObject(jsonkit.UnsafeString(out))
		choice = firstChoice(root.Get("choices"))
		return root, choice, choice.Get("message")
	}
	for _, key := range []string{"content", "refusal", "reasoning_content"} {
		_, _, msg := cur()
		merged, err := rewrite.OpenAIMergeText(msg.Get(key), nmsg.Get(key), "text")
		if err != nil {
			return nil, err
		}
		if merged != nil {
			out = jsonkit.SetMember(out, msg, key, merged)
		}
	}
	out, err = chatAppendToolCalls(out, nmsg, func() gjson.Result { _, _, msg := cur(); return msg })
	if err != nil {
		return nil, err
	}
	if fr := nchoice.Get("finish_reason"); fr.Exists() {
		_, choice, _ := cur()
		out = jsonkit.SetMember(out, choice, "finish_reason", []byte(fr.Raw))
	}
	root, _, _ := cur()
	if u := rewrite.OpenAIMergeUsage(root.Get("usage"), nroot.Get("usage"), chatUsageKeys); u != nil {
		out = jsonkit.SetMember(out, root, "usage", u)
	}
	return out, nil
}

// chatReplyPair parses two complete Chat replies for MergeReplies and
// ContinueReply: both roots, and next's choice 0 and its message. Both
// replies must have a choices[0].message object.
func chatReplyPair(first, next []byte) (froot, nroot, nchoice, nmsg gjson.Result, err error) {
	if froot, err = rewrite.ParseReplyRoot(first); err != nil {
		return
	}
	if nroot, err = rewrite.ParseReplyRoot(next); err != nil {
		return
	}
	nchoice = firstChoice(nroot.Get("choices"))
	nmsg = nchoice.Get("message")
	if !firstChoice(froot.Get("choices")).Get("message").IsObject() || !nmsg.IsObject() {
		err = fmt.Errorf("%w: no choices[0].message object", rewrite.ErrMalformedReply)
	}
	return
}

// chatIsTool reports a tool (or legacy function) result message.
func chatIsTool(m gjson.Result) bool {
	r := m.Get("role").Str
	return m.IsObject() && (r == "tool" || r == "function")
}

// chatToolRunEnd is the index just after element pos and the tool messages
// that directly follow it: where AppendUserTextAt puts text for a tool
// message, and so how far that edit reaches.
func chatToolRunEnd(elems []gjson.Result, pos int) int {
	j := pos + 1
	for j < len(elems) && chatIsTool(elems[j]) {
		j++
	}
	return j
}

// chatAppendToolCalls appends the tool calls of next's message nmsg to the
// message of out that msg returns (read after out's latest edit): after its
// calls, or as its tool_calls when it has none. MergeReplies and
// ContinueReply both end a merge with it.
func chatAppendToolCalls(out []byte, nmsg gjson.Result, msg func() gjson.Result) ([]byte, error) {
	nc := nmsg.Get("tool_calls")
	if err := rewrite.WantArray(nc, ""); err != nil {
		return nil, fmt.Errorf("%w: choices[0].message.tool_calls is not an array", rewrite.ErrMalformedReply)
	}
	inner := rewrite.OpenAIInnerString(nc)
	if inner == "" {
		return out, nil
	}
	m := msg()
	switch fc := m.Get("tool_calls"); {
	case fc.IsArray():
		return jsonkit.AppendElements(out, fc, []byte(inner)), nil
	case jsonkit.IsNull(fc):
		return jsonkit.SetMember(out, m, "tool_calls", []byte(nc.Raw)), nil
	}
	return nil, fmt.Errorf("%w: choices[0].message.tool_calls is not an array", rewrite.ErrMalformedReply)
}

func (chatCodec) ConversationKey() string { return conversationMember }

func (chatCodec) FillerElem() string { return `{"role":"user","content":""}` }

// UserTurnElems: a user message is its own element; text for a tool
// message goes in a new user message after the run of tool messages that
// follows it, so its edit spans that run.
func (c chatCodec) UserTurnElems(body []byte) ([]gjson.Result, func(int) (int, int, error), error) {
	elems, err := rewrite.ConversationElems(c.parsed, body, "messages")
	if err != nil {
		return nil, nil, err
	}
	return elems, func(pos int) (int, int, error) {
		if pos < 0 || pos >= len(elems) {
			return 0, 0, rewrite.ErrNoBatch
		}
		if chatIsTool(elems[pos]) {
			return pos, chatToolRunEnd(elems, pos), nil
		}
		return pos, pos + 1, nil
	}, nil
}

// AppendUserTexts is AppendUserTextAt for several turns, batched.
func (c chatCodec) AppendUserTexts(body []byte, ops []rewrite.UserTexts) ([]byte, error) {
	return rewrite.AppendUserTextsBatched(c, c, c.parsed, body, ops)
}
