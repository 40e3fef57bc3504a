package anthropic

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// anthropicCodec speaks the Anthropic Messages API (POST /v1/messages and
// /v1/messages/count_tokens).
type anthropicCodec struct {
	views  *rewrite.ViewCache // nil: no view cache
	parsed *rewrite.Parsed    // the body this request's codec parsed; nil: none
}

var (
	_ rewrite.Codec           = anthropicCodec{}
	_ rewrite.BodyReleaser    = anthropicCodec{}
	_ rewrite.UserTextsEditor = anthropicCodec{}
)

// anthropicKeys are the top-level members the request view reads.
var anthropicKeys = []string{"model", "stream", "max_tokens", "system", "tools", "messages", "metadata", "thinking"}

func (c anthropicCodec) ParseRequest(body []byte) (*conv.Request, error) {
	pb, err := rewrite.ParseBody(c.views, body, conversationMember)
	if err != nil {
		return nil, err
	}
	defer pb.Release()
	idx := pb.Idx
	c.parsed.Remember(idx)
	var m [8]gjson.Result
	idx.Lookup(anthropicKeys, m[:])
	model, stream, maxTok, system, tools, msgs, meta := m[0], m[1], m[2], m[3], m[4], m[5], m[6]
	thinking := m[7].Get("type").Str
	uid := meta.Get("user_id")
	for _, err := range []error{
		rewrite.WantString(model, "model"), rewrite.WantBool(stream, "stream"), rewrite.WantNumber(maxTok, "max_tokens"),
		rewrite.WantStringOrArray(system, "system"), rewrite.WantArray(tools, "tools"), rewrite.WantArray(msgs, "messages"),
		rewrite.WantObject(meta, "metadata"), rewrite.WantString(uid, "metadata.user_id"),
	} {
		if err != nil {
			return nil, err
		}
	}
	req := &conv.Request{Model: jsonkit.Name(model), Stream: stream.Bool(), MetadataUserID: jsonkit.OwnedString(uid),
		Thinking: thinking == "enabled" || thinking == "adaptive"}
	req.Lineage = pb.Lineage
	if maxTok.Type == gjson.Number {
		req.MaxOutputTokens, req.HasMaxOutputTokens = maxTok.Int(), true
	}
	if req.System, err = anthropicSystem(c.views, idx, system); err != nil {
		return nil, rewrite.AtField(err, "system")
	}
	if req.Tools, err = rewrite.ReuseToolDefs(pb, anthropicToolsViews, tools, func() ([]conv.ToolDef, error) { return rewrite.NamedTools(idx, tools, "name") }); err != nil {
		return nil, rewrite.AtField(err, "tools")
	}
	if req.Messages, req.MessageAnchors, err = rewrite.ParseMessages(pb, msgs, "messages", anthropicViews, anthropicMessage); err != nil {
		return nil, err
	}
	req.Fingerprint = rewrite.Fingerprint(req.System, req.Messages)
	req.Side, req.SideKnown = anthropicSide(rewrite.IndexMembers(idx, anthropicSideKeys...)), true
	return req, nil
}

// anthropicSystem returns the text of a string or text-block system prompt,
// blocks joined by a blank line.
func anthropicSystem(views *rewrite.ViewCache, idx *jsonkit.Index, sys gjson.Result) (string, error) {
	if sys.Type == gjson.String {
		return jsonkit.OwnedString(sys), nil
	}
	return rewrite.CachedText(views, anthropicSystemViews, sys.Raw, func() (string, error) { return anthropicSystemBlocks(idx, sys) })
}

func anthropicSystemBlocks(idx *jsonkit.Index, sys gjson.Result) (string, error) {
	var texts []string
	var err error
	idx.Each(sys, func(i int, b gjson.Result) bool {
		if !b.IsObject() {
			err = rewrite.AtIndex(rewrite.TypeError("", "an object"), i)
			return false
		}
		var m [2]gjson.Result
		jsonkit.Members(b, []string{"type", "text"}, m[:])
		if m[0].Str == "text" {
			t := m[1]
			if t.Type != gjson.String {
				err = rewrite.AtIndex(rewrite.TypeError("text", "a string"), i)
				return false
			}
			texts = append(texts, t.Str)
		}
		return true
	})
	return strings.Clone(rewrite.JoinTexts(texts)), err
}

func anthropicMessage(m gjson.Result, names *rewrite.ToolNames) (conv.Message, error) {
	if !m.IsObject() {
		return conv.Message{}, rewrite.TypeError("", "an object")
	}
	role, content := m.Get("role"), m.Get("content")
	if err := rewrite.WantString(role, "role"); err != nil {
		return conv.Message{}, err
	}
	if err := rewrite.WantStringOrArray(content, "content"); err != nil {
		return conv.Message{}, err
	}
	msg := conv.Message{Role: anthropicRole(role.Str)}
	var err error
	msg.Blocks, err = anthropicBlocks(content, names)
	return msg, rewrite.AtField(err, "content")
}

func anthropicRole(r string) conv.Role {
	switch r {
	case "user":
		return conv.RoleUser
	case "assistant":
		return conv.RoleAssistant
	case "system":
		return conv.RoleSystem
	}
	return conv.Role(strings.Clone(r))
}

// anthropicBlocks normalises message content: a string or content blocks.
func anthropicBlocks(content gjson.Result, names *rewrite.ToolNames) ([]conv.Block, error) {
	if content.Type == gjson.String {
		return []conv.Block{{Kind: conv.BlockText, Text: jsonkit.OwnedString(content)}}, nil
	}
	var blocks []conv.Block
	var err error
	jsonkit.EachElement(content, func(j int, b gjson.Result) bool {
		var blk conv.Block
		if blk, err = anthropicBlock(b, names); err != nil {
			err = rewrite.AtIndex(err, j)
			return false
		}
		blocks = append(blocks, blk)
		return true
	})
	return blocks, err
}

// anthropicBlockKeys are the block members the view reads, found in one
// pass over the block (separate lookups would each rescan a large
// tool_result's content).
var anthropicBlockKeys = []string{"type", "text", "thinking", "id", "name", "input", "tool_use_id", "content", "is_error"}

func anthropicBlock(b gjson.Result, names *rewrite.ToolNames) (conv.Block, error) {
	if !b.IsObject() {
		return conv.Block{}, rewrite.TypeError("", "an object")
	}
	var m [9]gjson.Result
	jsonkit.Members(b, anthropicBlockKeys, m[:])
	typ, text, thinking, id, name, input, useID, content, isError := m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8]
	// want reads a string member, recording the first type error.
	var err error
	want := func(v gjson.Result, key string) string {
		if err == nil {
			err = rewrite.WantString(v, key)
		}
		return jsonkit.OwnedString(v)
	}
	var blk conv.Block
	switch typ.Str {
	case "text":
		blk = conv.Block{Kind: conv.BlockText, Text: want(text, "text")}
	case "thinking":
		blk = conv.Block{Kind: conv.BlockThinking, Text: want(thinking, "thinking")}
	case "redacted_thinking":
		blk = conv.Block{Kind: conv.BlockThinking}
	case "tool_use":
		blk = conv.Block{Kind: conv.BlockToolCall, ToolCallID: want(id, "id"), ToolName: want(name, "name"), Args: jsonkit.OwnedRaw(input)}
		names.Add(blk.ToolCallID, blk.ToolName)
	case "tool_result":
		id := want(useID, "tool_use_id")
		if err == nil {
			err = rewrite.WantStringOrArray(content, "content")
		}
		blk = conv.Block{Kind: conv.BlockToolResult, ToolCallID: id, ToolName: (*names)[id],
			IsError: isError.Bool(), Text: rewrite.ResultText(content, "text", "text")}
	default:
		blk = conv.Block{Kind: conv.BlockOther}
	}
	return blk, err
}

// ReleaseBody implements rewrite.BodyReleaser.
func (c anthropicCodec) ReleaseBody(body []byte) { c.parsed.ReleaseFinal(body) }

// BuildInto is rewrite.BuildTargeter: the request's last edit may build
// its result in the previous request's sent body.
func (c anthropicCodec) BuildInto(t *rewrite.BuildTarget) { c.parsed.BuildInto(t) }

// CopyRuns is rewrite.CopyMapper: how the last edit of the request made out.
func (c anthropicCodec) CopyRuns(src, out []byte) []rewrite.CopyRun {
	return c.parsed.CopyRuns(src, out)
}

// IndexOf implements rewrite.BodyIndexer.
func (c anthropicCodec) IndexOf(body []byte) *jsonkit.Index { return c.parsed.IndexOf(body) }

func (c anthropicCodec) ApplyEdits(body []byte, e conv.RequestEdits) ([]byte, error) {
	return rewrite.ApplyEdits(body, e, c.editOps())
}

// ApplyEditsWithUserTexts implements rewrite.UserTextsEditor.
func (c anthropicCodec) ApplyEditsWithUserTexts(body []byte, texts []rewrite.UserTexts, e conv.RequestEdits) ([]byte, error) {
	return rewrite.ApplyEditsWithUserTexts(body, texts, e, c.editOps(), c, c)
}

// The edit primitives that are closures, made once (editOps runs for
// every request).
var (
	anthropicAddTools = rewrite.AppendTools("tools")
	anthropicSetMax   = rewrite.SetMaxKey("max_tokens")
)

// editOps are the API's edit primitives, through the request's Parsed.
func (c anthropicCodec) editOps() rewrite.EditOps {
	return rewrite.EditOps{
		Parsed: c.parsed, ToolsKey: "tools", SystemKey: "system", MaxKey: "max_tokens",
		Tools:        anthropicTools,
		AddTools:     anthropicAddTools,
		InsertTools:  rewrite.InsertElements,
		AppendSystem: anthropicAppendSystem,
		InsertSystem: anthropicInsertSystem,
		AppendUser:   anthropicAppendUser,
		SetMax:       anthropicSetMax,
	}
}

// anthropicTools renders (and remembers) the tool definitions hooks add.
var anthropicTools = rewrite.NewToolRenderer(anthropicTool)

// anthropicTool renders a custom tool definition.
func anthropicTool(dst []byte, t conv.ToolSpec, params []byte) []byte {
	dst = append(dst, `{"name":`...)
	dst = jsonkit.AppendString(dst, t.Name)
	if t.Description != "" {
		dst = append(dst, `,"description":`...)
		dst = jsonkit.AppendString(dst, t.Description)
	}
	dst = append(dst, `,"input_schema":`...)
	dst = append(dst, params...)
	return append(dst, '}')
}

func anthropicAppendSystem(body []byte, texts []string) ([]byte, error) {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		return nil, rewrite.ErrNotObject
	}
	sys := jsonkit.Member(root, "system")
	switch {
	case sys.Type == gjson.String:
		return jsonkit.AppendToString(body, sys, rewrite.SuffixText(sys.Str, texts)), nil
	case sys.IsArray():
		return jsonkit.AppendElements(body, sys, rewrite.TextItems("text", texts)), nil
	case jsonkit.IsNull(sys):
		return jsonkit.SetMember(body, root, "system", jsonkit.Quote(rewrite.JoinTexts(texts))), nil
	}
	return nil, fmt.Errorf("rewrite: cannot edit system: unexpected type")
}

// anthropicInsertSystem is anthropicAppendSystem as an insertion into a
// string or array system value (rewrite.EditOps.InsertSystem).
func anthropicInsertSystem(value []byte, texts []string) (int, []byte, bool) {
	if len(value) > 0 && value[0] == '[' {
		return rewrite.InsertElements(value, rewrite.TextItems("text", texts))
	}
	return rewrite.InsertSuffix(value, texts)
}

// anthropicAppendUser appends text blocks to the newest user message: a
// string content becomes [original text block, new text blocks]; an array
// gets the blocks at its end (after any tool_result blocks). Without a user
// message the edit is a no-op.
func anthropicAppendUser(body []byte, texts []string) ([]byte, error) {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		return nil, rewrite.ErrNotObject
	}
	msg, ok := rewrite.LastWithRole(jsonkit.Member(root, "messages"), "role", "user", false)
	if !ok {
		return body, nil
	}
	return rewrite.AppendContentParts(body, msg, "content", rewrite.TextItems("text", texts), `{"type":"text","text":`)
}

func (anthropicCodec) ErrorBody(status int, message string) []byte {
	return anthropicError(status, message)
}

func (anthropicCodec) StreamErrorEvent(status int, message string) []byte {
	return rewrite.AppendEvent(nil, []byte("error"), anthropicError(status, message))
}

func (anthropicCodec) SideRequest(body []byte) string {
	return anthropicSide(rewrite.TopMembers(body, anthropicSideKeys...))
}

// anthropicSideKeys are the members anthropicSide reads, in its order.
var anthropicSideKeys = []string{"tools", "tool_choice", "output_format", "output_config"}

func anthropicSide(r []gjson.Result) string {
	return rewrite.FirstSide(
		rewrite.SideIf(r[2].Get("type").Str == "json_schema" || r[3].Get("format.type").Str == "json_schema", rewrite.SideJSONOutput),
		rewrite.SideIf(r[1].Get("type").Str == "none", rewrite.SideToolChoiceNone),
		rewrite.SideIf(!rewrite.NonEmptyArray(r[0]), rewrite.SideNoTools),
	)
}
