package openaichat

import (
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// chatCodec speaks OpenAI Chat Completions (POST /v1/chat/completions).
type chatCodec struct {
	views  *rewrite.ViewCache // nil: no view cache
	parsed *rewrite.Parsed    // the body this request's codec parsed; nil: none
}

var (
	_ rewrite.Codec           = chatCodec{}
	_ rewrite.BodyReleaser    = chatCodec{}
	_ rewrite.UserTextsEditor = chatCodec{}
)

// chatKeys are the top-level members the request view reads.
var chatKeys = []string{"model", "stream", "tools", "messages", "max_completion_tokens", "max_tokens", "prompt_cache_key"}

func (c chatCodec) ParseRequest(body []byte) (*conv.Request, error) {
	return parseChatRequest(c.views, c.parsed, body, false)
}

// FingerprintRequest returns ParseRequest's Fingerprint (Fingerprinter).
func (c chatCodec) FingerprintRequest(body []byte) (string, error) {
	req, err := parseChatRequest(c.views, nil, body, true)
	if err != nil {
		return "", err
	}
	return req.Fingerprint, nil
}

// parseChatRequest is ParseRequest; with fpOnly, the messages after the
// first assistant message are checked but not viewed, and the request has
// only the messages up to it (all that System and Fingerprint read). The
// index is remembered in parsed (nil: not).
func parseChatRequest(views *rewrite.ViewCache, parsed *rewrite.Parsed, body []byte, fpOnly bool) (*conv.Request, error) {
	pb, err := rewrite.ParseBody(views, body, conversationMember)
	if err != nil {
		return nil, err
	}
	defer pb.Release()
	idx := pb.Idx
	parsed.Remember(idx)
	var m [7]gjson.Result
	idx.Lookup(chatKeys, m[:])
	model, stream, tools, msgs, mct, mt, pck := m[0], m[1], m[2], m[3], m[4], m[5], m[6]
	for _, err := range []error{
		rewrite.WantString(model, "model"), rewrite.WantBool(stream, "stream"), rewrite.WantArray(tools, "tools"),
		rewrite.WantArray(msgs, "messages"), rewrite.WantNumber(mct, "max_completion_tokens"),
		rewrite.WantNumber(mt, "max_tokens"), rewrite.WantString(pck, "prompt_cache_key"),
	} {
		if err != nil {
			return nil, err
		}
	}
	req := &conv.Request{Model: jsonkit.Name(model), Stream: stream.Bool(), PromptCacheKey: jsonkit.OwnedString(pck)}
	req.Lineage = pb.Lineage
	switch {
	case mct.Type == gjson.Number:
		req.MaxOutputTokens, req.HasMaxOutputTokens = mct.Int(), true
	case mt.Type == gjson.Number:
		req.MaxOutputTokens, req.HasMaxOutputTokens = mt.Int(), true
	}
	if req.Tools, err = rewrite.ReuseToolDefs(pb, chatToolsViews, tools, func() ([]conv.ToolDef, error) { return chatTools(idx, tools) }); err != nil {
		return nil, rewrite.AtField(err, "tools")
	}
	if !fpOnly {
		if req.Messages, req.MessageAnchors, err = rewrite.ParseMessages(pb, msgs, "messages", chatViews, chatMessage); err != nil {
			return nil, err
		}
	} else if req.Messages, err = chatFingerprintMessages(views, idx, msgs); err != nil {
		return nil, err
	}
	var system []string
	for _, msg := range req.Messages {
		if msg.Role != conv.RoleSystem {
			break
		}
		for _, b := range msg.Blocks {
			if b.Kind == conv.BlockText {
				system = append(system, b.Text)
			}
		}
	}
	req.System = rewrite.JoinTexts(system)
	req.Fingerprint = rewrite.Fingerprint(req.System, req.Messages)
	req.Side, req.SideKnown = chatSide(rewrite.IndexMembers(idx, chatSideKeys...)), true
	return req, nil
}

// chatFingerprintMessages views the messages up to the first assistant
// message, and checks that the ones after it parse.
func chatFingerprintMessages(views *rewrite.ViewCache, idx *jsonkit.Index, msgs gjson.Result) ([]conv.Message, error) {
	// A few messages get a view: the resolver's default Arena (64 blocks)
	// would be most of what the fingerprint allocates.
	r := rewrite.ViewResolver{Cache: views, Parser: chatViews, Parse: chatMessage, Arena: make([]conv.Block, 0, 8)}
	var out []conv.Message
	var err error
	seenAssistant := false
	idx.Each(msgs, func(i int, m gjson.Result) bool {
		if seenAssistant {
			if err = r.Check(m); err != nil {
				err = rewrite.AtField(rewrite.AtIndex(err, i), "messages")
				return false
			}
			return true
		}
		var msg conv.Message
		if msg, err = r.Message(m); err != nil {
			err = rewrite.AtField(rewrite.AtIndex(err, i), "messages")
			return false
		}
		seenAssistant = msg.Role == conv.RoleAssistant
		out = append(out, msg)
		return true
	})
	return out, err
}

// chatTools lists the tools' names: a function tool's function.name, else a
// custom tool's custom.name. The definitions come from the index and each
// is read only up to its name (the schema after it is never scanned).
func chatTools(idx *jsonkit.Index, tools gjson.Result) ([]conv.ToolDef, error) {
	var defs []conv.ToolDef
	var err error
	idx.Each(tools, func(i int, t gjson.Result) bool {
		if !t.IsObject() {
			err = rewrite.AtIndex(rewrite.TypeError("", "an object"), i)
			return false
		}
		n := jsonkit.NestedMember(t, "function", "name")
		if !n.Exists() {
			n = jsonkit.NestedMember(t, "custom", "name")
		}
		if err = rewrite.AtIndex(rewrite.WantString(n, "function.name"), i); err != nil {
			return false
		}
		if n.Str != "" {
			defs = append(defs, conv.ToolDef{Name: jsonkit.OwnedString(n)})
		}
		return true
	})
	return defs, err
}

func chatMessage(m gjson.Result, names *rewrite.ToolNames) (conv.Message, error) {
	if !m.IsObject() {
		return conv.Message{}, rewrite.TypeError("", "an object")
	}
	role, content, calls := m.Get("role"), m.Get("content"), m.Get("tool_calls")
	id, fc := m.Get("tool_call_id"), m.Get("function_call")
	for _, err := range []error{
		rewrite.WantString(role, "role"), rewrite.WantStringOrArray(content, "content"),
		rewrite.WantArray(calls, "tool_calls"), rewrite.WantString(id, "tool_call_id"),
		rewrite.WantObject(fc, "function_call"),
	} {
		if err != nil {
			return conv.Message{}, err
		}
	}
	msg := conv.Message{Role: rewrite.ChatRole(role.Str)}
	if msg.Role == conv.RoleTool {
		tid := jsonkit.OwnedString(id)
		name := jsonkit.OwnedString(m.Get("name"))
		if name == "" {
			name = (*names)[tid]
		}
		msg.Blocks = []conv.Block{{Kind: conv.BlockToolResult, ToolCallID: tid, ToolName: name,
			Text: rewrite.ResultText(content, "text", "text")}}
		return msg, nil
	}
	var err error
	if content.Type == gjson.String {
		if content.Str != "" {
			msg.Blocks = append(msg.Blocks, conv.Block{Kind: conv.BlockText, Text: jsonkit.OwnedString(content)})
		}
	} else {
		jsonkit.EachElement(content, func(j int, p gjson.Result) bool {
			if !p.IsObject() {
				err = rewrite.AtField(rewrite.AtIndex(rewrite.TypeError("", "an object"), j), "content")
				return false
			}
			if p.Get("type").Str != "text" {
				msg.Blocks = append(msg.Blocks, conv.Block{Kind: conv.BlockOther})
				return true
			}
			t := p.Get("text")
			if err = rewrite.AtField(rewrite.AtIndex(rewrite.WantString(t, "text"), j), "content"); err != nil {
				return false
			}
			msg.Blocks = append(msg.Blocks, conv.Block{Kind: conv.BlockText, Text: jsonkit.OwnedString(t)})
			return true
		})
		if err != nil {
			return conv.Message{}, err
		}
	}
	jsonkit.EachElement(calls, func(j int, c gjson.Result) bool {
		var blk conv.Block
		if blk, err = chatToolCall(c); err != nil {
			err = rewrite.AtField(rewrite.AtIndex(err, j), "tool_calls")
			return false
		}
		names.Add(blk.ToolCallID, blk.ToolName)
		msg.Blocks = append(msg.Blocks, blk)
		return true
	})
	if err == nil && fc.IsObject() {
		var blk conv.Block
		if blk, err = chatFunction(fc); err == nil {
			msg.Blocks = append(msg.Blocks, blk)
		}
		err = rewrite.AtField(err, "function_call")
	}
	return msg, err
}

// chatToolCall normalises one assistant tool_calls element.
func chatToolCall(c gjson.Result) (conv.Block, error) {
	if !c.IsObject() {
		return conv.Block{}, rewrite.TypeError("", "an object")
	}
	id := c.Get("id")
	if err := rewrite.WantString(id, "id"); err != nil {
		return conv.Block{}, err
	}
	fn := c.Get("function")
	if !fn.IsObject() {
		if err := rewrite.WantObject(fn, "function"); err != nil {
			return conv.Block{}, err
		}
		return conv.Block{Kind: conv.BlockOther, ToolCallID: jsonkit.OwnedString(id)}, nil // e.g. a custom tool call
	}
	blk, err := chatFunction(fn)
	blk.ToolCallID = jsonkit.OwnedString(id)
	return blk, rewrite.AtField(err, "function")
}

// chatFunction normalises a {name, arguments} function object.
func chatFunction(fn gjson.Result) (conv.Block, error) {
	name, args := fn.Get("name"), fn.Get("arguments")
	if err := rewrite.WantString(name, "name"); err != nil {
		return conv.Block{}, err
	}
	if err := rewrite.WantString(args, "arguments"); err != nil {
		return conv.Block{}, err
	}
	blk := conv.Block{Kind: conv.BlockToolCall, ToolName: jsonkit.OwnedString(name)}
	if args.Type == gjson.String {
		blk.Args = []byte(args.Str)
	}
	return blk, nil
}

// ReleaseBody implements rewrite.BodyReleaser.
func (c chatCodec) ReleaseBody(body []byte) { c.parsed.ReleaseFinal(body) }

// BuildInto is rewrite.BuildTargeter: the request's last edit may build
// its result in the previous request's sent body.
func (c chatCodec) BuildInto(t *rewrite.BuildTarget) { c.parsed.BuildInto(t) }

// CopyRuns is rewrite.CopyMapper: how the last edit of the request made out.
func (c chatCodec) CopyRuns(src, out []byte) []rewrite.CopyRun { return c.parsed.CopyRuns(src, out) }

// IndexOf implements rewrite.BodyIndexer.
func (c chatCodec) IndexOf(body []byte) *jsonkit.Index { return c.parsed.IndexOf(body) }

func (c chatCodec) ApplyEdits(body []byte, e conv.RequestEdits) ([]byte, error) {
	return rewrite.ApplyEdits(body, e, c.editOps())
}

// ApplyEditsWithUserTexts implements rewrite.UserTextsEditor.
func (c chatCodec) ApplyEditsWithUserTexts(body []byte, texts []rewrite.UserTexts, e conv.RequestEdits) ([]byte, error) {
	return rewrite.ApplyEditsWithUserTexts(body, texts, e, c.editOps(), c, c)
}

// The edit primitives that are closures, made once (editOps runs for
// every request).
var (
	chatAddTools = rewrite.AppendTools("tools")
)

// editOps are the API's edit primitives, through the request's Parsed.
func (c chatCodec) editOps() rewrite.EditOps {
	return rewrite.EditOps{
		Parsed: c.parsed, ToolsKey: "tools", SystemKey: "messages",
		Tools:        chatToolRenderer,
		AddTools:     chatAddTools,
		InsertTools:  rewrite.InsertElements,
		AppendSystem: chatAppendSystem,
		InsertSystem: chatInsertSystem,
		// chatInsertSystem reads the leading message and whether there is one.
		InsertSystemHead: true,
		AppendUser:       chatAppendUser,
		SetMax:           chatSetMax,
	}
}

// chatSetMax sets max_completion_tokens, or max_tokens when the request uses
// only that older field.
func chatSetMax(body []byte, n int64) ([]byte, error) {
	key := "max_completion_tokens"
	if root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body)); ok && !jsonkit.Member(root, key).Exists() && jsonkit.Member(root, "max_tokens").Exists() {
		key = "max_tokens"
	}
	return rewrite.SetTopLevelInt(body, key, n)
}

// chatToolRenderer renders (and remembers) the tool definitions hooks add.
var chatToolRenderer = rewrite.NewToolRenderer(chatTool)

// chatTool renders a function tool definition.
func chatTool(dst []byte, t conv.ToolSpec, params []byte) []byte {
	dst = append(dst, `{"type":"function","function":{"name":`...)
	dst = jsonkit.AppendString(dst, t.Name)
	if t.Description != "" {
		dst = append(dst, `,"description":`...)
		dst = jsonkit.AppendString(dst, t.Description)
	}
	dst = append(dst, `,"parameters":`...)
	dst = append(dst, params...)
	return append(dst, "}}"...)
}

// chatAppendSystem appends to the first of the leading system/developer
// messages (a string content gets "\n\n"+text, an array gets text parts);
// without one it inserts a system message at index 0.
func chatAppendSystem(body []byte, texts []string) ([]byte, error) {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		return nil, rewrite.ErrNotObject
	}
	msgs := jsonkit.Member(root, "messages")
	if !msgs.IsArray() {
		if !jsonkit.IsNull(msgs) {
			return nil, fmt.Errorf("rewrite: cannot edit messages: not an array")
		}
		return jsonkit.SetMember(body, root, "messages", rewrite.Enclose('[', chatTextMessage("system", []string{rewrite.JoinTexts(texts)}), ']')), nil
	}
	first, c := leadingSystem(msgs)
	if !first.Exists() {
		return jsonkit.PrependElement(body, msgs, chatTextMessage("system", []string{rewrite.JoinTexts(texts)})), nil
	}
	switch {
	case c.Type == gjson.String:
		return jsonkit.AppendToString(body, c, rewrite.SuffixText(c.Raw[1:len(c.Raw)-1], texts)), nil
	case c.IsArray():
		return jsonkit.AppendElements(body, c, rewrite.TextItems("text", texts)), nil
	case jsonkit.IsNull(c):
		return jsonkit.SetMember(body, first, "content", jsonkit.Quote(rewrite.JoinTexts(texts))), nil
	}
	return nil, fmt.Errorf("rewrite: cannot edit system message content: unexpected type")
}

// leadingSystem returns the first message of msgs when it is a system or
// developer message, and its content (a string content not decoded: its Str
// is empty; the system prompt runs to tens of KB).
func leadingSystem(msgs gjson.Result) (first, content gjson.Result) {
	jsonkit.EachElement(msgs, func(_ int, m gjson.Result) bool {
		if r := jsonkit.Member(m, "role").Str; r == "system" || r == "developer" {
			var c [1]gjson.Result
			jsonkit.MembersRaw(m, contentKey, c[:])
			first, content = m, c[0]
		}
		return false // only the first message can start the leading run
	})
	return first, content
}

// contentKey is the member leadingSystem reads raw.
var contentKey = []string{"content"}

// chatInsertSystem is chatAppendSystem as an insertion into the messages
// array value (rewrite.EditOps.InsertSystem): into the leading system
// message's string or array content, or a new system message first; ok is
// false for anything else (a null content: chatAppendSystem replaces it).
func chatInsertSystem(value []byte, texts []string) (at int, ins []byte, ok bool) {
	if len(value) < 2 || value[0] != '[' {
		return 0, nil, false
	}
	msgs := gjson.Result{Type: gjson.JSON, Raw: jsonkit.UnsafeString(value)}
	first, c := leadingSystem(msgs)
	switch {
	case !first.Exists():
		item := chatTextMessage("system", []string{rewrite.JoinTexts(texts)})
		if jsonkit.LastValueEnd(msgs) >= 0 {
			item = append(item, ',')
		}
		return 1, item, true // as PrependElement
	case c.Type == gjson.String:
		at, ins, ok = rewrite.InsertSuffix(jsonkit.UnsafeBytes(c.Raw), texts)
	case c.IsArray():
		at, ins, ok = rewrite.InsertElements(jsonkit.UnsafeBytes(c.Raw), rewrite.TextItems("text", texts))
	}
	return c.Index + at, ins, ok
}

// chatTextMessage renders {"role":role,"content":…}: one text as a string,
// several as text parts.
func chatTextMessage(role string, texts []string) []byte {
	b := append([]byte(nil), `{"role":`...)
	b = jsonkit.AppendString(b, role)
	b = append(b, `,"content":`...)
	if len(texts) == 1 {
		b = jsonkit.AppendString(b, texts[0])
	} else {
		b = append(b, rewrite.Enclose('[', rewrite.TextItems("text", texts), ']')...)
	}
	return append(b, '}')
}

// chatAppendUser appends the texts to the last message when it is the
// user's (string content becomes text parts, the original first); when
// assistant or tool messages follow the last user message, or there is no
// user message, it appends a new user message instead, so tool results stay
// directly after their tool calls.
func chatAppendUser(body []byte, texts []string) ([]byte, error) {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		return nil, rewrite.ErrNotObject
	}
	msgs := jsonkit.Member(root, "messages")
	if !msgs.IsArray() {
		return body, nil
	}
	var last gjson.Result
	jsonkit.EachElement(msgs, func(_ int, m gjson.Result) bool {
		last = m
		return true
	})
	if last.IsObject() && last.Get("role").Str == "user" {
		return rewrite.AppendContentParts(body, last, "content", rewrite.TextItems("text", texts), `{"type":"text","text":`)
	}
	return jsonkit.AppendElements(body, msgs, chatTextMessage("user", texts)), nil
}

func (chatCodec) ErrorBody(status int, message string) []byte {
	return rewrite.OpenAIError(status, message)
}

func (chatCodec) StreamErrorEvent(status int, message string) []byte {
	return rewrite.AppendData(nil, rewrite.OpenAIError(status, message))
}

func (chatCodec) SideRequest(body []byte) string {
	return chatSide(rewrite.TopMembers(body, chatSideKeys...))
}

// chatSideKeys are the members chatSide reads, in its order.
var chatSideKeys = []string{"tools", "functions", "tool_choice", "function_call", "response_format"}

func chatSide(r []gjson.Result) string {
	return rewrite.FirstSide(
		rewrite.SideIf(rewrite.IsJSONFormat(r[4].Get("type")), rewrite.SideJSONOutput),
		rewrite.SideIf(r[2].Str == "none" || (r[3].Str == "none" && !rewrite.IsPresent(r[2])), rewrite.SideToolChoiceNone),
		rewrite.SideIf(!rewrite.NonEmptyArray(r[0]) && !rewrite.NonEmptyArray(r[1]), rewrite.SideNoTools),
	)
}
