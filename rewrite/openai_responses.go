package rewrite

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// responsesCodec speaks the OpenAI Responses API (POST /v1/responses).
type responsesCodec struct {
	views *ViewCache // nil: no view cache
}

var _ Codec = responsesCodec{}

// responsesKeys are the top-level members the request view reads.
var responsesKeys = []string{"model", "stream", "max_output_tokens", "instructions", "input", "tools",
	"prompt_cache_key", "previous_response_id"}

func (c responsesCodec) ParseRequest(body []byte) (*conv.Request, error) {
	_, idx, err := parseIndexed(body)
	if err != nil {
		return nil, err
	}
	var m [8]gjson.Result
	idx.Lookup(responsesKeys, m[:])
	model, stream, mot, instr, input, tools, pck, prev := m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]
	for _, err := range []error{
		wantString(model, "model"), wantBool(stream, "stream"), wantNumber(mot, "max_output_tokens"),
		wantString(instr, "instructions"), wantStringOrArray(input, "input"), wantArray(tools, "tools"),
		wantString(pck, "prompt_cache_key"), wantString(prev, "previous_response_id"),
	} {
		if err != nil {
			return nil, err
		}
	}
	req := &conv.Request{Model: jsonkit.OwnedString(model), Stream: stream.Bool(), PromptCacheKey: jsonkit.OwnedString(pck), PreviousResponseID: jsonkit.OwnedString(prev)}
	if mot.Type == gjson.Number {
		req.MaxOutputTokens, req.HasMaxOutputTokens = mot.Int(), true
	}
	if req.Tools, err = namedTools(idx, tools, "name"); err != nil {
		return nil, at(err, "tools")
	}
	if input.Type == gjson.String {
		req.Messages = []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{{Kind: conv.BlockText, Text: jsonkit.OwnedString(input)}}}}
	} else if req.Messages, err = responsesItems(c.views, idx, input); err != nil {
		return nil, err
	}
	var system []string
	if instr.Str != "" {
		system = append(system, instr.Str)
	}
	for _, m := range req.Messages {
		if m.Role != conv.RoleSystem {
			break
		}
		for _, b := range m.Blocks {
			if b.Kind == conv.BlockText {
				system = append(system, b.Text)
			}
		}
	}
	req.System = strings.Clone(joinTexts(system))
	req.Fingerprint = fingerprint(req.System, req.Messages)
	return req, nil
}

// responsesItems normalises an input item list. Consecutive assistant-side
// items (assistant messages, function and custom tool calls, reasoning) form
// one assistant message; each function_call_output or custom_tool_call_output
// is a tool message.
func responsesItems(views *ViewCache, idx *jsonkit.Index, input gjson.Result) ([]conv.Message, error) {
	var msgs []conv.Message
	r := viewResolver{cache: views, parser: responsesViews, parse: responsesItem}
	var err error
	idx.Each(input, func(j int, it gjson.Result) bool {
		var msg conv.Message
		if msg, err = r.message(it); err != nil {
			err = at(atIndex(err, j), "input")
			return false
		}
		if n := len(msgs); n > 0 && msg.Role == conv.RoleAssistant && msgs[n-1].Role == conv.RoleAssistant {
			msgs[n-1].Blocks = append(msgs[n-1].Blocks, msg.Blocks...)
			msgs[n-1].Digest = nil // the merged message has its own digest
			return true
		}
		msgs = append(msgs, msg)
		return true
	})
	return msgs, err
}

func responsesItem(it gjson.Result, names *toolNames) (conv.Message, error) {
	if !it.IsObject() {
		return conv.Message{}, typeErr("", "an object")
	}
	typ := it.Get("type")
	if err := wantString(typ, "type"); err != nil {
		return conv.Message{}, err
	}
	// want reads a string member, recording the first type error.
	var err error
	want := func(key string) gjson.Result {
		v := it.Get(key)
		if err == nil {
			err = wantString(v, key)
		}
		return v
	}
	switch typ.Str {
	case "", "message":
		role, content := want("role"), it.Get("content")
		if err == nil {
			err = wantStringOrArray(content, "content")
		}
		if err != nil {
			return conv.Message{}, err
		}
		msg := conv.Message{Role: chatRole(role.Str)}
		msg.Blocks, err = responsesContent(content)
		return msg, at(err, "content")
	case "function_call":
		blk := conv.Block{Kind: conv.BlockToolCall, ToolCallID: jsonkit.OwnedString(want("call_id")), ToolName: jsonkit.OwnedString(want("name"))}
		if a := want("arguments"); a.Type == gjson.String {
			blk.Args = []byte(a.Str)
		}
		names.add(blk.ToolCallID, blk.ToolName)
		return conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{blk}}, err
	case "custom_tool_call":
		blk := conv.Block{Kind: conv.BlockToolCall, Freeform: true, ToolCallID: jsonkit.OwnedString(want("call_id")), ToolName: jsonkit.OwnedString(want("name"))}
		if in := want("input"); in.Type == gjson.String {
			blk.Args = freeformArgs(in.Str)
		}
		names.add(blk.ToolCallID, blk.ToolName)
		return conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{blk}}, err
	case "function_call_output", "custom_tool_call_output":
		id := jsonkit.OwnedString(want("call_id"))
		out := it.Get("output")
		if err == nil {
			err = wantStringOrArray(out, "output")
		}
		blk := conv.Block{Kind: conv.BlockToolResult, ToolCallID: id, ToolName: (*names)[id], Text: responsesText(out),
			Freeform: typ.Str == "custom_tool_call_output"}
		return conv.Message{Role: conv.RoleTool, Blocks: []conv.Block{blk}}, err
	case "reasoning":
		var parts []string
		jsonkit.EachElement(it.Get("summary"), func(_ int, s gjson.Result) bool {
			parts = append(parts, s.Get("text").String())
			return true
		})
		blk := conv.Block{Kind: conv.BlockThinking, Text: strings.Clone(strings.Join(parts, "\n"))}
		return conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{blk}}, nil
	}
	role := conv.RoleAssistant // *_call items the model made
	if strings.HasSuffix(typ.Str, "_output") {
		role = conv.RoleTool // and their results
	}
	return conv.Message{Role: role, Blocks: []conv.Block{{Kind: conv.BlockOther}}}, nil
}

// freeformArgs renders the input text of a custom tool call as the
// arguments object views carry for it: {"input":"<text>"}. It is built from
// the decoded text, so the same input gives the same bytes however the wire
// escaped it.
func freeformArgs(input string) []byte {
	b := make([]byte, 0, len(input)+12)
	b = append(b, `{"input":`...)
	b = jsonkit.AppendString(b, input)
	return append(b, '}')
}

// responsesCallType reports whether an output or input item type is a tool
// call the model made that the view lists among its calls: a function_call
// or a custom_tool_call.
func responsesCallType(t string) bool {
	return t == "function_call" || t == "custom_tool_call"
}

// responsesContent normalises message content: a string or content parts.
func responsesContent(c gjson.Result) ([]conv.Block, error) {
	if c.Type == gjson.String {
		return []conv.Block{{Kind: conv.BlockText, Text: jsonkit.OwnedString(c)}}, nil
	}
	var blocks []conv.Block
	var err error
	jsonkit.EachElement(c, func(j int, p gjson.Result) bool {
		if !p.IsObject() {
			err = atIndex(typeErr("", "an object"), j)
			return false
		}
		switch p.Get("type").Str {
		case "input_text", "output_text", "text":
			t := p.Get("text")
			if err = atIndex(wantString(t, "text"), j); err != nil {
				return false
			}
			blocks = append(blocks, conv.Block{Kind: conv.BlockText, Text: jsonkit.OwnedString(t)})
		default:
			blocks = append(blocks, conv.Block{Kind: conv.BlockOther})
		}
		return true
	})
	return blocks, err
}

// responsesText returns the text of a function_call_output or
// custom_tool_call_output output.
func responsesText(out gjson.Result) string {
	if out.Type == gjson.String {
		return jsonkit.OwnedString(out)
	}
	var b strings.Builder
	jsonkit.EachElement(out, func(_ int, p gjson.Result) bool {
		if t := p.Get("type").Str; t == "input_text" || t == "output_text" || t == "text" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p.Get("text").String())
		}
		return true
	})
	return b.String()
}

func (responsesCodec) ApplyEdits(body []byte, e conv.RequestEdits) ([]byte, error) {
	return applyEdits(body, e, editOps{
		renderTool:   responsesTool,
		addTools:     appendTools("tools"),
		appendSystem: responsesAppendSystem,
		appendUser:   responsesAppendUser,
		setMax:       setMaxKey("max_output_tokens"),
	})
}

// responsesTool renders a flat function tool. strict is set to false
// explicitly: the Responses API defaults it to true, which rejects schemas
// that are not written for strict mode.
func responsesTool(dst []byte, t conv.ToolSpec, params []byte) []byte {
	dst = append(dst, `{"type":"function","name":`...)
	dst = jsonkit.AppendString(dst, t.Name)
	if t.Description != "" {
		dst = append(dst, `,"description":`...)
		dst = jsonkit.AppendString(dst, t.Description)
	}
	dst = append(dst, `,"parameters":`...)
	dst = append(dst, params...)
	return append(dst, `,"strict":false}`...)
}

func responsesAppendSystem(body []byte, texts []string) ([]byte, error) {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		return nil, errNotObject
	}
	instr := jsonkit.Member(root, "instructions")
	switch {
	case instr.Type == gjson.String:
		return jsonkit.AppendToString(body, instr, suffixText(instr.Str, texts)), nil
	case jsonkit.IsNull(instr):
		return jsonkit.SetMember(body, root, "instructions", jsonkit.Quote(joinTexts(texts))), nil
	}
	return nil, fmt.Errorf("rewrite: cannot edit instructions: not a string")
}

// responsesAppendUser appends input_text parts to the last input item when
// it is a user message (string content becomes parts, the original first;
// a string input becomes such a message); otherwise it appends a new user
// message item, so function_call_output items stay where they are.
func responsesAppendUser(body []byte, texts []string) ([]byte, error) {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		return nil, errNotObject
	}
	parts := textItems("input_text", texts)
	const strPart = `{"type":"input_text","text":`
	input := jsonkit.Member(root, "input")
	switch {
	case input.Type == gjson.String:
		return jsonkit.Splice(body, input.Index, jsonkit.ValueEnd(input), []byte(`[{"role":"user","content":[`+strPart),
			[]byte(input.Raw), []byte("},"), parts, []byte("]}]")), nil
	case input.IsArray():
		var last gjson.Result
		jsonkit.EachElement(input, func(_ int, it gjson.Result) bool {
			last = it
			return true
		})
		if t := last.Get("type").Str; last.IsObject() && (t == "" || t == "message") && last.Get("role").Str == "user" {
			return appendContentParts(body, last, "content", parts, strPart)
		}
		return jsonkit.AppendElements(body, input, responsesUserItem(parts)), nil
	case jsonkit.IsNull(input):
		return jsonkit.SetMember(body, root, "input", wrap('[', responsesUserItem(parts), ']')), nil
	}
	return nil, fmt.Errorf("rewrite: cannot edit input: unexpected type")
}

// responsesUserItem renders a user message item holding parts.
func responsesUserItem(parts []byte) []byte {
	b := append([]byte(nil), `{"role":"user","content":[`...)
	b = append(b, parts...)
	return append(b, "]}"...)
}

func (responsesCodec) ErrorBody(status int, message string) []byte {
	return openAIError(status, message)
}

// StreamErrorEvent renders an "error" event. It carries no sequence_number:
// the codec cannot know the stream's; a caller that tracks it may add one.
func (responsesCodec) StreamErrorEvent(status int, message string) []byte {
	b := append([]byte(nil), `{"type":"error","code":`...)
	b = jsonkit.AppendString(b, openAIErrorType(status))
	b = append(b, `,"message":`...)
	b = jsonkit.AppendString(b, message)
	b = append(b, `,"param":null}`...)
	return AppendEvent(nil, []byte("error"), b)
}

func (responsesCodec) sideRequest(body []byte) string {
	r := topMembers(body, "tools", "tool_choice", "text")
	return firstSide(
		when(jsonFormat(r[2].Get("format.type")), SideJSONOutput),
		when(r[1].Str == "none", SideToolChoiceNone),
		when(!nonEmptyArray(r[0]), SideNoTools),
	)
}
