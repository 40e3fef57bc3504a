package rewrite

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// chatCodec speaks OpenAI Chat Completions (POST /v1/chat/completions).
type chatCodec struct {
	views *ViewCache // nil: no view cache
}

var _ Codec = chatCodec{}

// chatKeys are the top-level members the request view reads.
var chatKeys = []string{"model", "stream", "tools", "messages", "max_completion_tokens", "max_tokens", "prompt_cache_key"}

func (c chatCodec) ParseRequest(body []byte) (*conv.Request, error) {
	return parseChatRequest(c.views, body, false)
}

// fingerprintRequest returns ParseRequest's Fingerprint (fingerprinter).
func (c chatCodec) fingerprintRequest(body []byte) (string, error) {
	req, err := parseChatRequest(c.views, body, true)
	if err != nil {
		return "", err
	}
	return req.Fingerprint, nil
}

// parseChatRequest is ParseRequest; with fpOnly, the messages after the
// first assistant message are checked but not viewed, and the request has
// only the messages up to it (all that System and Fingerprint read).
func parseChatRequest(views *ViewCache, body []byte, fpOnly bool) (*conv.Request, error) {
	_, idx, err := parseIndexed(body)
	if err != nil {
		return nil, err
	}
	var m [7]gjson.Result
	idx.Lookup(chatKeys, m[:])
	model, stream, tools, msgs, mct, mt, pck := m[0], m[1], m[2], m[3], m[4], m[5], m[6]
	for _, err := range []error{
		wantString(model, "model"), wantBool(stream, "stream"), wantArray(tools, "tools"),
		wantArray(msgs, "messages"), wantNumber(mct, "max_completion_tokens"),
		wantNumber(mt, "max_tokens"), wantString(pck, "prompt_cache_key"),
	} {
		if err != nil {
			return nil, err
		}
	}
	req := &conv.Request{Model: jsonkit.OwnedString(model), Stream: stream.Bool(), PromptCacheKey: jsonkit.OwnedString(pck)}
	switch {
	case mct.Type == gjson.Number:
		req.MaxOutputTokens, req.HasMaxOutputTokens = mct.Int(), true
	case mt.Type == gjson.Number:
		req.MaxOutputTokens, req.HasMaxOutputTokens = mt.Int(), true
	}
	if req.Tools, err = chatTools(tools); err != nil {
		return nil, at(err, "tools")
	}
	r := viewResolver{cache: views, parser: chatViews, parse: chatMessage}
	if fpOnly {
		// A few messages get a view: the resolver's default arena (64
		// blocks) would be most of what the fingerprint allocates.
		r.arena = make([]conv.Block, 0, 8)
	}
	var system []string
	leading, seenAssistant := true, false
	idx.Each(msgs, func(i int, m gjson.Result) bool {
		if fpOnly && seenAssistant {
			if err = r.check(m); err != nil {
				err = at(atIndex(err, i), "messages")
				return false
			}
			return true
		}
		var msg conv.Message
		msg, err = r.message(m)
		if err != nil {
			err = at(atIndex(err, i), "messages")
			return false
		}
		if leading && msg.Role == conv.RoleSystem {
			for _, b := range msg.Blocks {
				if b.Kind == conv.BlockText {
					system = append(system, b.Text)
				}
			}
		} else {
			leading = false
		}
		seenAssistant = seenAssistant || msg.Role == conv.RoleAssistant
		req.Messages = append(req.Messages, msg)
		return true
	})
	if err != nil {
		return nil, err
	}
	req.System = joinTexts(system)
	req.Fingerprint = fingerprint(req.System, req.Messages)
	return req, nil
}

// chatTools lists function (and custom) tool names.
func chatTools(tools gjson.Result) ([]conv.ToolDef, error) {
	var defs []conv.ToolDef
	var err error
	jsonkit.EachElement(tools, func(i int, t gjson.Result) bool {
		if !t.IsObject() {
			err = atIndex(typeErr("", "an object"), i)
			return false
		}
		n := t.Get("function.name")
		if !n.Exists() {
			n = t.Get("custom.name")
		}
		if err = atIndex(wantString(n, "function.name"), i); err != nil {
			return false
		}
		if n.Str != "" {
			defs = append(defs, conv.ToolDef{Name: jsonkit.OwnedString(n)})
		}
		return true
	})
	return defs, err
}

func chatRole(r string) conv.Role {
	switch r {
	case "user":
		return conv.RoleUser
	case "assistant":
		return conv.RoleAssistant
	case "system", "developer":
		return conv.RoleSystem
	case "tool", "function":
		return conv.RoleTool
	}
	return conv.Role(strings.Clone(r))
}

func chatMessage(m gjson.Result, names *toolNames) (conv.Message, error) {
	if !m.IsObject() {
		return conv.Message{}, typeErr("", "an object")
	}
	role, content, calls := m.Get("role"), m.Get("content"), m.Get("tool_calls")
	id, fc := m.Get("tool_call_id"), m.Get("function_call")
	for _, err := range []error{
		wantString(role, "role"), wantStringOrArray(content, "content"),
		wantArray(calls, "tool_calls"), wantString(id, "tool_call_id"),
		wantObject(fc, "function_call"),
	} {
		if err != nil {
			return conv.Message{}, err
		}
	}
	msg := conv.Message{Role: chatRole(role.Str)}
	if msg.Role == conv.RoleTool {
		tid := jsonkit.OwnedString(id)
		name := jsonkit.OwnedString(m.Get("name"))
		if name == "" {
			name = (*names)[tid]
		}
		msg.Blocks = []conv.Block{{Kind: conv.BlockToolResult, ToolCallID: tid, ToolName: name,
			Text: resultText(content, "text", "text")}}
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
				err = at(atIndex(typeErr("", "an object"), j), "content")
				return false
			}
			if p.Get("type").Str != "text" {
				msg.Blocks = append(msg.Blocks, conv.Block{Kind: conv.BlockOther})
				return true
			}
			t := p.Get("text")
			if err = at(atIndex(wantString(t, "text"), j), "content"); err != nil {
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
			err = at(atIndex(err, j), "tool_calls")
			return false
		}
		names.add(blk.ToolCallID, blk.ToolName)
		msg.Blocks = append(msg.Blocks, blk)
		return true
	})
	if err == nil && fc.IsObject() {
		var blk conv.Block
		if blk, err = chatFunction(fc); err == nil {
			msg.Blocks = append(msg.Blocks, blk)
		}
		err = at(err, "function_call")
	}
	return msg, err
}

// chatToolCall normalises one assistant tool_calls element.
func chatToolCall(c gjson.Result) (conv.Block, error) {
	if !c.IsObject() {
		return conv.Block{}, typeErr("", "an object")
	}
	id := c.Get("id")
	if err := wantString(id, "id"); err != nil {
		return conv.Block{}, err
	}
	fn := c.Get("function")
	if !fn.IsObject() {
		if err := wantObject(fn, "function"); err != nil {
			return conv.Block{}, err
		}
		return conv.Block{Kind: conv.BlockOther, ToolCallID: jsonkit.OwnedString(id)}, nil // e.g. a custom tool call
	}
	blk, err := chatFunction(fn)
	blk.ToolCallID = jsonkit.OwnedString(id)
	return blk, at(err, "function")
}

// chatFunction normalises a {name, arguments} function object.
func chatFunction(fn gjson.Result) (conv.Block, error) {
	name, args := fn.Get("name"), fn.Get("arguments")
	if err := wantString(name, "name"); err != nil {
		return conv.Block{}, err
	}
	if err := wantString(args, "arguments"); err != nil {
		return conv.Block{}, err
	}
	blk := conv.Block{Kind: conv.BlockToolCall, ToolName: jsonkit.OwnedString(name)}
	if args.Type == gjson.String {
		blk.Args = []byte(args.Str)
	}
	return blk, nil
}

func (chatCodec) ApplyEdits(body []byte, e conv.RequestEdits) ([]byte, error) {
	return applyEdits(body, e, editOps{
		renderTool:   chatTool,
		addTools:     appendTools("tools"),
		appendSystem: chatAppendSystem,
		appendUser:   chatAppendUser,
		setMax:       chatSetMax,
	})
}

// chatSetMax sets max_completion_tokens, or max_tokens when the request uses
// only that older field.
func chatSetMax(body []byte, n int64) ([]byte, error) {
	key := "max_completion_tokens"
	if root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body)); ok && !jsonkit.Member(root, key).Exists() && jsonkit.Member(root, "max_tokens").Exists() {
		key = "max_tokens"
	}
	return setTopLevelInt(body, key, n)
}

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
		return nil, errNotObject
	}
	msgs := jsonkit.Member(root, "messages")
	if !msgs.IsArray() {
		if !jsonkit.IsNull(msgs) {
			return nil, fmt.Errorf("rewrite: cannot edit messages: not an array")
		}
		return jsonkit.SetMember(body, root, "messages", wrap('[', chatTextMessage("system", []string{joinTexts(texts)}), ']')), nil
	}
	var first gjson.Result
	jsonkit.EachElement(msgs, func(_ int, m gjson.Result) bool {
		if r := m.Get("role").Str; r == "system" || r == "developer" {
			first = m
		}
		return false // only the first message can start the leading run
	})
	if !first.Exists() {
		return jsonkit.PrependElement(body, msgs, chatTextMessage("system", []string{joinTexts(texts)})), nil
	}
	c := first.Get("content")
	switch {
	case c.Type == gjson.String:
		return jsonkit.AppendToString(body, c, suffixText(c.Str, texts)), nil
	case c.IsArray():
		return jsonkit.AppendElements(body, c, textItems("text", texts)), nil
	case jsonkit.IsNull(c):
		return jsonkit.SetMember(body, first, "content", jsonkit.Quote(joinTexts(texts))), nil
	}
	return nil, fmt.Errorf("rewrite: cannot edit system message content: unexpected type")
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
		b = append(b, wrap('[', textItems("text", texts), ']')...)
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
		return nil, errNotObject
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
		return appendContentParts(body, last, "content", textItems("text", texts), `{"type":"text","text":`)
	}
	return jsonkit.AppendElements(body, msgs, chatTextMessage("user", texts)), nil
}

func (chatCodec) ErrorBody(status int, message string) []byte { return openAIError(status, message) }

func (chatCodec) StreamErrorEvent(status int, message string) []byte {
	return AppendData(nil, openAIError(status, message))
}

func (chatCodec) sideRequest(body []byte) string {
	r := topMembers(body, "tools", "functions", "tool_choice", "function_call", "response_format")
	return firstSide(
		when(jsonFormat(r[4].Get("type")), SideJSONOutput),
		when(r[2].Str == "none" || (r[3].Str == "none" && !present(r[2])), SideToolChoiceNone),
		when(!nonEmptyArray(r[0]) && !nonEmptyArray(r[1]), SideNoTools),
	)
}
