package responses

import (
	"fmt"
	"strings"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
)

// This file holds the Responses side of TurnCodec. ParseRequest merges
// consecutive assistant-side input items into one view message and turns a
// string input into one user message; responsesInput maps view positions
// back to input items with the same rule. As for Chat, an edit with nothing
// to do returns its input itself; every other successful call returns a new
// slice.

var _ rewrite.TurnCodec = responsesCodec{}

// responsesAssistantItem reports whether ParseRequest counts an input item
// as assistant-side (merged with its assistant neighbours): an assistant
// message, a function_call or custom_tool_call, a reasoning item, or any
// other item type except the *_output results.
func responsesAssistantItem(it gjson.Result) bool {
	switch t := it.Get("type").Str; t {
	case "", "message":
		return it.Get("role").Str == "assistant"
	case "function_call", "custom_tool_call", "reasoning":
		return true
	default:
		return !strings.HasSuffix(t, "_output")
	}
}

// responsesRanges returns, for each message of the request view built from
// the input items elems, the range [r[0], r[1]) of items it came from.
func responsesRanges(elems []gjson.Result) ([][2]int, error) {
	var ranges [][2]int
	prevAssistant := false
	for i, it := range elems {
		if !it.IsObject() {
			return nil, rewrite.AtField(rewrite.AtIndex(rewrite.TypeError("", "an object"), i), "input")
		}
		a := responsesAssistantItem(it)
		if a && prevAssistant {
			ranges[len(ranges)-1][1] = i + 1
			continue
		}
		ranges = append(ranges, [2]int{i, i + 1})
		prevAssistant = a
	}
	return ranges, nil
}

// responsesInput is a request body read for a positional edit.
type responsesInput struct {
	root, input gjson.Result
	elems       []gjson.Result // input items (none for a string input)
	ranges      [][2]int       // view message -> items; nil for a string input
	str         bool           // input is a string: one user message
}

// views is the number of messages in the request view.
func (in *responsesInput) views() int {
	if in.str {
		return 1
	}
	return len(in.ranges)
}

func readResponsesInput(body []byte) (*responsesInput, error) {
	root, err := rewrite.ParseTrustedRoot(body)
	if err != nil {
		return nil, err
	}
	in := &responsesInput{root: root, input: jsonkit.Member(root, "input")}
	if err := rewrite.WantStringOrArray(in.input, "input"); err != nil {
		return nil, err
	}
	if in.input.Type == gjson.String {
		in.str = true
		return in, nil
	}
	in.elems = rewrite.BlocksElems(in.input)
	if in.ranges, err = responsesRanges(in.elems); err != nil {
		return nil, err
	}
	return in, nil
}

// stringAsItem renders a string input as the user message item it stands
// for, its literal kept byte for byte.
func (in *responsesInput) stringAsItem() []byte {
	return []byte(`{"role":"user","content":` + in.input.Raw + `}`)
}

// setInput replaces the whole input member with an array of items.
func (in *responsesInput) setInput(body []byte, items [][]byte) []byte {
	return jsonkit.SetMember(body, in.root, "input", rewrite.Enclose('[', rewrite.OpenAIJoin(items), ']'))
}

// ReplyAsMessages returns the reply's output items as input items, byte for
// byte: message items with output_text parts are accepted as input, and
// reasoning items keep their encrypted_content.
func (responsesCodec) ReplyAsMessages(reply []byte) ([][]byte, error) {
	root, err := rewrite.ParseReplyRoot(reply)
	if err != nil {
		return nil, err
	}
	output := root.Get("output")
	if !output.IsArray() {
		return nil, fmt.Errorf("%w: no output array", rewrite.ErrMalformedReply)
	}
	elems := rewrite.BlocksElems(output)
	items := make([][]byte, 0, len(elems))
	for i, it := range elems {
		if !it.IsObject() {
			return nil, fmt.Errorf("%w: output[%d] is not an object", rewrite.ErrMalformedReply, i)
		}
		items = append(items, []byte(it.Raw))
	}
	return items, nil
}

// ToolResultMessages renders one {"type":"function_call_output","call_id",
// "output"} item per result, or {"type":"custom_tool_call_output",…} for a
// Freeform result (the answer to a custom tool call). There is no error
// flag: a refusal's text says so.
func (responsesCodec) ToolResultMessages(results []conv.ToolResult) ([][]byte, error) {
	items := make([][]byte, 0, len(results))
	for i, r := range results {
		if r.CallID == "" {
			return nil, fmt.Errorf("rewrite: tool result %d has no call id", i)
		}
		typ := "function_call_output"
		if r.Freeform {
			typ = "custom_tool_call_output"
		}
		b := append([]byte(nil), `{"type":"`...)
		b = append(b, typ...)
		b = append(b, `","call_id":`...)
		b = jsonkit.AppendString(b, r.CallID)
		b = append(b, `,"output":`...)
		b = jsonkit.AppendString(b, r.Content)
		items = append(items, append(b, '}'))
	}
	return items, nil
}

// AppendMessages appends items to input. A string input first becomes
// [{"role":"user","content":<the string>}]; an absent input becomes the
// items.
func (responsesCodec) AppendMessages(body []byte, items [][]byte) ([]byte, error) {
	in, err := readResponsesInput(body)
	if err != nil {
		return nil, err
	}
	if err := rewrite.OpenAICheckItems(items); err != nil {
		return nil, err
	}
	switch {
	case len(items) == 0:
		return body, nil
	case in.str:
		return in.setInput(body, append([][]byte{in.stringAsItem()}, items...)), nil
	case jsonkit.IsNull(in.input):
		return in.setInput(body, items), nil
	}
	return rewrite.OpenAISpliceElems(body, in.input, in.elems, len(in.elems), len(in.elems), items), nil
}

// ReplaceMessages replaces every input item of the view message at pos (a
// merged assistant message may span several) with items. For a string
// input, pos 0 is the whole input, which becomes the array of items.
func (responsesCodec) ReplaceMessages(body []byte, pos int, items [][]byte) ([]byte, error) {
	in, err := readResponsesInput(body)
	if err != nil {
		return nil, err
	}
	if pos < 0 || pos >= in.views() {
		return nil, rewrite.OpenAIPosErr(pos, in.views())
	}
	if err := rewrite.OpenAICheckItems(items); err != nil {
		return nil, err
	}
	if in.str {
		return in.setInput(body, items), nil
	}
	r := in.ranges[pos]
	return rewrite.OpenAISpliceElems(body, in.input, in.elems, r[0], r[1], items), nil
}

// PrependToolResults inserts one function_call_output (or, for a Freeform
// result, custom_tool_call_output) item per result right after the last item
// of the assistant message at pos.
func (c responsesCodec) PrependToolResults(body []byte, pos int, results []conv.ToolResult) ([]byte, error) {
	in, err := readResponsesInput(body)
	if err != nil {
		return nil, err
	}
	if pos < 0 || pos >= in.views() {
		return nil, rewrite.OpenAIPosErr(pos, in.views())
	}
	if in.str || !responsesAssistantItem(in.elems[in.ranges[pos][0]]) {
		return nil, fmt.Errorf("rewrite: message %d is not an assistant message", pos)
	}
	items, err := c.ToolResultMessages(results)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return body, nil
	}
	at := in.ranges[pos][1]
	return rewrite.OpenAISpliceElems(body, in.input, in.elems, at, at, items), nil
}

// AppendUserTextAt appends input_text parts to the user message at pos as
// ApplyEdits does for the newest one (string content becomes parts, the
// original first; a string input becomes such a message). When pos is a
// tool result (function_call_output or another *_output item), a new user
// message item goes after the run of results pos belongs to.
func (responsesCodec) AppendUserTextAt(body []byte, pos int, texts []string) ([]byte, error) {
	in, err := readResponsesInput(body)
	if err != nil {
		return nil, err
	}
	if pos < 0 || pos >= in.views() {
		return nil, rewrite.OpenAIPosErr(pos, in.views())
	}
	if len(texts) == 0 {
		return body, nil
	}
	parts := rewrite.TextItems("input_text", texts)
	const strPart = `{"type":"input_text","text":`
	if in.str {
		return jsonkit.Splice(body, in.input.Index, jsonkit.ValueEnd(in.input), []byte(`[{"role":"user","content":[`+strPart),
			[]byte(in.input.Raw), []byte("},"), parts, []byte("]}]")), nil
	}
	it := in.elems[in.ranges[pos][0]]
	switch t := it.Get("type").Str; {
	case (t == "" || t == "message") && it.Get("role").Str == "user":
		return rewrite.AppendContentParts(body, it, "content", parts, strPart)
	case in.isResult(pos):
		at := in.ranges[in.resultRunEnd(pos)-1][1]
		return rewrite.OpenAISpliceElems(body, in.input, in.elems, at, at, [][]byte{responsesUserItem(parts)}), nil
	}
	return nil, fmt.Errorf("rewrite: message %d is neither a user message nor a tool result", pos)
}

// EditReply drops tool call output items (function_call and
// custom_tool_call; indices as ParseReply numbers them, counting both kinds
// in output order) and moves those in first, in that order, to just before
// the first call item (after any reasoning or message item that precedes
// it); every other item keeps its place. Separators between the original
// item slots are reused. status is left alone: a response whose calls are
// all removed is still "completed", which ParseReply reads as a finished
// turn.
func (responsesCodec) EditReply(reply []byte, remove, first []int) ([]byte, error) {
	if len(remove) == 0 && len(first) == 0 {
		return reply, nil
	}
	root, err := rewrite.ParseReplyRoot(reply)
	if err != nil {
		return nil, err
	}
	elems := rewrite.BlocksElems(root.Get("output"))
	var calls []int // output index of each call item
	for i, it := range elems {
		if responsesCallType(it.Get("type").Str) {
			calls = append(calls, i)
		}
	}
	plan, err := rewrite.OpenAICallOrder(len(calls), remove, first)
	if err != nil {
		return nil, err
	}
	stays := make([]bool, len(calls)) // kept in place
	for _, c := range plan[len(first):] {
		stays[c] = true
	}
	order := make([]int, 0, len(elems))
	k := 0 // the call's index among calls
	for i, it := range elems {
		if !responsesCallType(it.Get("type").Str) {
			order = append(order, i)
			continue
		}
		if k == 0 {
			for _, c := range first {
				order = append(order, calls[c])
			}
		}
		if stays[k] {
			order = append(order, i)
		}
		k++
	}
	return rewrite.OpenAIReorderElems(reply, elems, order), nil
}

// responsesUsageKeys names the Responses usage members.
var responsesUsageKeys = rewrite.OpenAIUsageKeys{In: "input_tokens", Out: "output_tokens", Total: "total_tokens",
	Details: "output_tokens_details", Reasoning: "reasoning_tokens"}

// responsesOutcome are the response members MergeReplies takes from next.
var responsesOutcome = []string{"id", "status", "incomplete_details", "error", "completed_at"}

// MergeReplies returns first with next's output items appended to its
// output; id, status, incomplete_details, error and completed_at are next's
// (null when next lacks them): the agent continues the chain from the last
// response upstream, and the outcome is the last one's. usage is next's
// with output_tokens (and output_tokens_details.reasoning_tokens) summed and
// total_tokens recomputed; input_tokens stays next's, whose input holds the
// whole conversation. Everything else (model, created_at, the echoed
// request fields such as previous_response_id) is first's.
func (responsesCodec) MergeReplies(first, next []byte) ([]byte, error) {
	froot, err := rewrite.ParseReplyRoot(first)
	if err != nil {
		return nil, err
	}
	nroot, err := rewrite.ParseReplyRoot(next)
	if err != nil {
		return nil, err
	}
	fout, nout := froot.Get("output"), nroot.Get("output")
	if rewrite.WantArray(fout, "") != nil || rewrite.WantArray(nout, "") != nil {
		return nil, fmt.Errorf("%w: output is not an array", rewrite.ErrMalformedReply)
	}
	out := append([]byte(nil), first...)
	if inner := rewrite.OpenAIInnerString(nout); inner != "" {
		if fout.IsArray() {
			out = jsonkit.AppendElements(out, fout, []byte(inner))
		} else {
			out = jsonkit.SetMember(out, froot, "output", []byte(nout.Raw))
		}
	}
	for _, key := range responsesOutcome {
		root, _ := jsonkit.RootObject(jsonkit.UnsafeString(out))
		switch v := nroot.Get(key); {
		case v.Exists():
			out = jsonkit.SetMember(out, root, key, []byte(v.Raw))
		case root.Get(key).Exists():
			out = jsonkit.SetMember(out, root, key, []byte("null"))
		}
	}
	root, _ := jsonkit.RootObject(jsonkit.UnsafeString(out))
	if u := rewrite.OpenAIMergeUsage(root.Get("usage"), nroot.Get("usage"), responsesUsageKeys); u != nil {
		out = jsonkit.SetMember(out, root, "usage", u)
	}
	return out, nil
}

// isResult reports whether view message v is a tool result (a
// function_call_output or another *_output item).
func (in *responsesInput) isResult(v int) bool {
	t := in.elems[in.ranges[v][0]].Get("type").Str
	return t != "message" && strings.HasSuffix(t, "_output")
}

// resultRunEnd is the view index just after message pos and, when pos is a
// tool result, the results that directly follow it: AppendUserTextAt puts
// text for a result after that run.
func (in *responsesInput) resultRunEnd(pos int) int {
	v := pos + 1
	if in.isResult(pos) {
		for v < len(in.ranges) && in.isResult(v) {
			v++
		}
	}
	return v
}

func (responsesCodec) ConversationKey() string { return conversationMember }

func (responsesCodec) FillerElem() string { return `{"role":"user","content":""}` }

// UserTurnElems maps view positions to input items: a user message is one
// item; text for a tool output goes in a new user message after the run of
// outputs that follows it, so its edit spans that run.
func (c responsesCodec) UserTurnElems(body []byte) ([]gjson.Result, func(int) (int, int, error), error) {
	var in *responsesInput
	if elems, ok := c.parsed.Elements(body, "input"); ok {
		// An array input the codec parsed: its items from the index.
		ranges, err := responsesRanges(elems)
		if err != nil {
			return nil, nil, err
		}
		in = &responsesInput{elems: elems, ranges: ranges}
	} else {
		var err error
		if in, err = readResponsesInput(body); err != nil {
			return nil, nil, err
		}
	}
	if in.str {
		return nil, nil, rewrite.ErrNoBatch
	}
	return in.elems, func(pos int) (int, int, error) {
		if pos < 0 || pos >= len(in.ranges) {
			return 0, 0, rewrite.ErrNoBatch
		}
		return in.ranges[pos][0], in.ranges[in.resultRunEnd(pos)-1][1], nil
	}, nil
}

// AppendUserTexts is AppendUserTextAt for several turns, batched.
func (c responsesCodec) AppendUserTexts(body []byte, ops []rewrite.UserTexts) ([]byte, error) {
	return rewrite.AppendUserTextsBatched(c, c, c.parsed, body, ops)
}
