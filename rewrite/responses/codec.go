package responses

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// responsesCodec speaks the OpenAI Responses API (POST /v1/responses).
type responsesCodec struct {
	views  *rewrite.ViewCache // nil: no view cache
	parsed *rewrite.Parsed    // the body this request's codec parsed; nil: none
}

var (
	_ rewrite.Codec           = responsesCodec{}
	_ rewrite.BodyReleaser    = responsesCodec{}
	_ rewrite.UserTextsEditor = responsesCodec{}
)

// responsesKeys are the top-level members the request view reads.
var responsesKeys = []string{"model", "stream", "max_output_tokens", "instructions", "input", "tools",
	"prompt_cache_key", "previous_response_id"}

func (c responsesCodec) ParseRequest(body []byte) (*conv.Request, error) {
	pb, err := rewrite.ParseBody(c.views, body, conversationMember)
	if err != nil {
		return nil, err
	}
	defer pb.Release()
	idx := pb.Idx
	c.parsed.Remember(idx)
	var m [8]gjson.Result
	idx.Lookup(responsesKeys, m[:])
	model, stream, mot, instr, input, tools, pck, prev := m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]
	for _, err := range []error{
		rewrite.WantString(model, "model"), rewrite.WantBool(stream, "stream"), rewrite.WantNumber(mot, "max_output_tokens"),
		rewrite.WantString(instr, "instructions"), rewrite.WantStringOrArray(input, "input"), rewrite.WantArray(tools, "tools"),
		rewrite.WantString(pck, "prompt_cache_key"), rewrite.WantString(prev, "previous_response_id"),
	} {
		if err != nil {
			return nil, err
		}
	}
	req := &conv.Request{Model: jsonkit.Name(model), Stream: stream.Bool(), PromptCacheKey: jsonkit.OwnedString(pck), PreviousResponseID: jsonkit.OwnedString(prev)}
	req.Lineage = pb.Lineage
	if mot.Type == gjson.Number {
		req.MaxOutputTokens, req.HasMaxOutputTokens = mot.Int(), true
	}
	if req.Tools, err = rewrite.ReuseToolDefs(pb, responsesToolsViews, tools, func() ([]conv.ToolDef, error) { return rewrite.NamedTools(idx, tools, "name") }); err != nil {
		return nil, rewrite.AtField(err, "tools")
	}
	if input.Type == gjson.String {
		req.Messages = []conv.Message{{Role: conv.RoleUser, Blocks: []conv.Block{{Kind: conv.BlockText, Text: jsonkit.OwnedString(input)}}}}
	} else if req.Messages, req.MessageAnchors, err = responsesItems(pb, input); err != nil {
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
	req.System = strings.Clone(rewrite.JoinTexts(system))
	req.Fingerprint = rewrite.Fingerprint(req.System, req.Messages)
	req.Side, req.SideKnown = responsesSide(rewrite.IndexMembers(idx, responsesSideKeys...)), true
	return req, nil
}

// responsesItems normalises an input item list. Consecutive assistant-side
// items (assistant messages, function and custom tool calls, reasoning) form
// one assistant message; each function_call_output or custom_tool_call_output
// is a tool message.
func responsesItems(pb *rewrite.Body, input gjson.Result) ([]conv.Message, []string, error) {
	return rewrite.ParseMergedMessages(pb, input, "input", responsesViews, responsesItem, func(last, next *conv.Message) bool {
		return next.Role == conv.RoleAssistant && last.Role == conv.RoleAssistant
	})
}

func responsesItem(it gjson.Result, names *rewrite.ToolNames) (conv.Message, error) {
	if !it.IsObject() {
		return conv.Message{}, rewrite.TypeError("", "an object")
	}
	typ := it.Get("type")
	if err := rewrite.WantString(typ, "type"); err != nil {
		return conv.Message{}, err
	}
	// want reads a string member, recording the first type error.
	var err error
	want := func(key string) gjson.Result {
		v := it.Get(key)
		if err == nil {
			err = rewrite.WantString(v, key)
		}
		return v
	}
	switch typ.Str {
	case "", "message":
		role, content := want("role"), it.Get("content")
		if err == nil {
			err = rewrite.WantStringOrArray(content, "content")
		}
		if err != nil {
			return conv.Message{}, err
		}
		msg := conv.Message{Role: rewrite.ChatRole(role.Str)}
		msg.Blocks, err = responsesContent(content)
		return msg, rewrite.AtField(err, "content")
	case "function_call":
		blk := conv.Block{Kind: conv.BlockToolCall, ToolCallID: jsonkit.OwnedString(want("call_id")), ToolName: jsonkit.OwnedString(want("name"))}
		if a := want("arguments"); a.Type == gjson.String {
			blk.Args = []byte(a.Str)
		}
		names.Add(blk.ToolCallID, blk.ToolName)
		return conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{blk}}, err
	case "custom_tool_call":
		blk := conv.Block{Kind: conv.BlockToolCall, Freeform: true, ToolCallID: jsonkit.OwnedString(want("call_id")), ToolName: jsonkit.OwnedString(want("name"))}
		if in := want("input"); in.Type == gjson.String {
			blk.Args = freeformArgs(in.Str)
		}
		names.Add(blk.ToolCallID, blk.ToolName)
		return conv.Message{Role: conv.RoleAssistant, Blocks: []conv.Block{blk}}, err
	case "function_call_output", "custom_tool_call_output":
		id := jsonkit.OwnedString(want("call_id"))
		out := it.Get("output")
		if err == nil {
			err = rewrite.WantStringOrArray(out, "output")
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
			err = rewrite.AtIndex(rewrite.TypeError("", "an object"), j)
			return false
		}
		switch p.Get("type").Str {
		case "input_text", "output_text", "text":
			t := p.Get("text")
			if err = rewrite.AtIndex(rewrite.WantString(t, "text"), j); err != nil {
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

// ReleaseBody implements rewrite.BodyReleaser.
func (c responsesCodec) ReleaseBody(body []byte) { c.parsed.ReleaseFinal(body) }

// BuildInto is rewrite.BuildTargeter: the request's last edit may build
// its result in the previous request's sent body.
func (c responsesCodec) BuildInto(t *rewrite.BuildTarget) { c.parsed.BuildInto(t) }

// CopyRuns is rewrite.CopyMapper: how the last edit of the request made out.
func (c responsesCodec) CopyRuns(src, out []byte) []rewrite.CopyRun {
	return c.parsed.CopyRuns(src, out)
}

// IndexOf implements rewrite.BodyIndexer.
func (c responsesCodec) IndexOf(body []byte) *jsonkit.Index { return c.parsed.IndexOf(body) }

func (c responsesCodec) ApplyEdits(body []byte, e conv.RequestEdits) ([]byte, error) {
	return rewrite.ApplyEdits(body, e, c.editOps())
}

// ApplyEditsWithUserTexts implements rewrite.UserTextsEditor.
func (c responsesCodec) ApplyEditsWithUserTexts(body []byte, texts []rewrite.UserTexts, e conv.RequestEdits) ([]byte, error) {
	return rewrite.ApplyEditsWithUserTexts(body, texts, e, c.editOps(), c, c)
}

// The edit primitives that are closures, made once (editOps runs for
// every request).
var (
	responsesAddTools = rewrite.AppendTools("tools")
	responsesSetMax   = rewrite.SetMaxKey("max_output_tokens")
)

// editOps are the API's edit primitives, through the request's Parsed.
func (c responsesCodec) editOps() rewrite.EditOps {
	return rewrite.EditOps{
		Parsed: c.parsed, ToolsKey: "tools", SystemKey: "instructions", MaxKey: "max_output_tokens",
		Tools:        responsesTools,
		AddTools:     responsesAddTools,
		InsertTools:  rewrite.InsertElements,
		AppendSystem: responsesAppendSystem,
		InsertSystem: rewrite.InsertSuffix,
		AppendUser:   responsesAppendUser,
		SetMax:       responsesSetMax,
	}
}

// responsesTools renders (and remembers) the tool definitions hooks add.
var responsesTools = rewrite.NewToolRenderer(responsesTool)

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
		return nil, rewrite.ErrNotObject
	}
	instr := jsonkit.Member(root, "instructions")
	switch {
	case instr.Type == gjson.String:
		return jsonkit.AppendToString(body, instr, rewrite.SuffixText(instr.Str, texts)), nil
	case jsonkit.IsNull(instr):
		return jsonkit.SetMember(body, root, "instructions", jsonkit.Quote(rewrite.JoinTexts(texts))), nil
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
		return nil, rewrite.ErrNotObject
	}
	parts := rewrite.TextItems("input_text", texts)
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
			return rewrite.AppendContentParts(body, last, "content", parts, strPart)
		}
		return jsonkit.AppendElements(body, input, responsesUserItem(parts)), nil
	case jsonkit.IsNull(input):
		return jsonkit.SetMember(body, root, "input", rewrite.Enclose('[', responsesUserItem(parts), ']')), nil
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
	return rewrite.OpenAIError(status, message)
}

// StreamErrorEvent renders an "error" event. It carries no sequence_number:
// the codec cannot know the stream's; a caller that tracks it may add one.
func (responsesCodec) StreamErrorEvent(status int, message string) []byte {
	b := append([]byte(nil), `{"type":"error","code":`...)
	b = jsonkit.AppendString(b, rewrite.OpenAIErrorType(status))
	b = append(b, `,"message":`...)
	b = jsonkit.AppendString(b, message)
	b = append(b, `,"param":null}`...)
	return rewrite.AppendEvent(nil, []byte("error"), b)
}

func (responsesCodec) SideRequest(body []byte) string {
	return responsesSide(rewrite.TopMembers(body, responsesSideKeys...))
}

// responsesSideKeys are the members responsesSide reads, in its order.
var responsesSideKeys = []string{"tools", "tool_choice", "text"}

func responsesSide(r []gjson.Result) string {
	return rewrite.FirstSide(
		rewrite.SideIf(rewrite.IsJSONFormat(r[2].Get("format.type")), rewrite.SideJSONOutput),
		rewrite.SideIf(r[1].Str == "none", rewrite.SideToolChoiceNone),
		rewrite.SideIf(!rewrite.NonEmptyArray(r[0]), rewrite.SideNoTools),
	)
}
