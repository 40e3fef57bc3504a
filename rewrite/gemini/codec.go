package gemini

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// geminiCodec speaks Gemini generateContent and streamGenerateContent. The
// REST API accepts camelCase and snake_case field names; the codec reads
// both and edits whichever the request uses (camelCase for new fields).
type geminiCodec struct {
	views  *rewrite.ViewCache // nil: no view cache
	parsed *rewrite.Parsed    // the body this request's codec parsed; nil: none
}

var (
	_ rewrite.Codec           = geminiCodec{}
	_ rewrite.BodyReleaser    = geminiCodec{}
	_ rewrite.UserTextsEditor = geminiCodec{}
)

// either returns obj's member named camel, or else snake, with the name found.
func either(obj gjson.Result, camel, snake string) (gjson.Result, string) {
	if v := obj.Get(camel); v.Exists() {
		return v, camel
	}
	return obj.Get(snake), snake
}

// geminiKeys are the top-level members the request view reads.
var geminiKeys = []string{"model", "contents", "tools", "systemInstruction", "system_instruction",
	"generationConfig", "generation_config"}

// ParseRequest builds the view. Stream is always false (streaming is chosen
// by the URL, which the proxy knows) and Model is "" unless the body names
// one (the model is in the URL).
func (c geminiCodec) ParseRequest(body []byte) (*conv.Request, error) {
	pb, err := rewrite.ParseBody(c.views, body, conversationMember)
	if err != nil {
		return nil, err
	}
	defer pb.Release()
	idx := pb.Idx
	c.parsed.Remember(idx)
	var m [7]gjson.Result
	idx.Lookup(geminiKeys, m[:])
	model, contents, tools := m[0], m[1], m[2]
	sys, sysKey := m[3], geminiKeys[3]
	if !sys.Exists() {
		sys, sysKey = m[4], geminiKeys[4]
	}
	gc, gcKey := m[5], geminiKeys[5]
	if !gc.Exists() {
		gc, gcKey = m[6], geminiKeys[6]
	}
	mot, motKey := either(gc, "maxOutputTokens", "max_output_tokens")
	for _, err := range []error{
		rewrite.WantString(model, "model"), rewrite.WantArray(contents, "contents"), rewrite.WantArray(tools, "tools"),
		rewrite.WantObject(sys, sysKey), rewrite.WantObject(gc, gcKey), rewrite.AtField(rewrite.WantNumber(mot, motKey), gcKey),
	} {
		if err != nil {
			return nil, err
		}
	}
	req := &conv.Request{Model: jsonkit.Name(model)}
	req.Lineage = pb.Lineage
	if mot.Type == gjson.Number {
		req.MaxOutputTokens, req.HasMaxOutputTokens = mot.Int(), true
	}
	if req.System, err = geminiSystem(sys); err != nil {
		return nil, rewrite.AtField(err, sysKey)
	}
	if req.Tools, err = rewrite.ReuseToolDefs(pb, geminiToolsViews, tools, func() ([]conv.ToolDef, error) { return geminiTools(tools) }); err != nil {
		return nil, rewrite.AtField(err, "tools")
	}
	if req.Messages, req.MessageAnchors, err = rewrite.ParseMessages(pb, contents, "contents", geminiViews, geminiContent); err != nil {
		return nil, err
	}
	req.Fingerprint = rewrite.Fingerprint(req.System, req.Messages)
	req.Side, req.SideKnown = geminiSide(rewrite.IndexMembers(idx, geminiSideKeys...)), true
	return req, nil
}

// geminiSystem returns the text parts of systemInstruction joined by a blank
// line.
func geminiSystem(sys gjson.Result) (string, error) {
	if !sys.IsObject() {
		return "", nil
	}
	parts := sys.Get("parts")
	if err := rewrite.WantArray(parts, "parts"); err != nil {
		return "", err
	}
	blocks, err := geminiParts(parts, nil)
	if err != nil {
		return "", rewrite.AtField(err, "parts")
	}
	var texts []string
	for _, b := range blocks {
		if b.Kind == conv.BlockText {
			texts = append(texts, b.Text)
		}
	}
	return rewrite.JoinTexts(texts), nil
}

// geminiContent normalises one contents element.
func geminiContent(c gjson.Result, names *rewrite.ToolNames) (conv.Message, error) {
	if !c.IsObject() {
		return conv.Message{}, rewrite.TypeError("", "an object")
	}
	role, parts := c.Get("role"), c.Get("parts")
	if err := rewrite.WantString(role, "role"); err != nil {
		return conv.Message{}, err
	}
	if err := rewrite.WantArray(parts, "parts"); err != nil {
		return conv.Message{}, err
	}
	msg := conv.Message{Role: geminiRole(role.Str)}
	var err error
	msg.Blocks, err = geminiParts(parts, names)
	return msg, rewrite.AtField(err, "parts")
}

func geminiRole(r string) conv.Role {
	switch r {
	case "user", "":
		return conv.RoleUser
	case "model":
		return conv.RoleAssistant
	case "function", "tool":
		return conv.RoleTool
	case "system":
		return conv.RoleSystem
	}
	return conv.Role(strings.Clone(r))
}

// geminiTools lists the names of all function declarations.
func geminiTools(tools gjson.Result) ([]conv.ToolDef, error) {
	var defs []conv.ToolDef
	var err error
	jsonkit.EachElement(tools, func(i int, t gjson.Result) bool {
		if !t.IsObject() {
			err = rewrite.AtIndex(rewrite.TypeError("", "an object"), i)
			return false
		}
		decls, key := either(t, "functionDeclarations", "function_declarations")
		if err = rewrite.AtIndex(rewrite.WantArray(decls, key), i); err != nil {
			return false
		}
		var more []conv.ToolDef
		if more, err = rewrite.NamedTools(nil, decls, "name"); err != nil {
			err = rewrite.AtIndex(rewrite.AtField(err, key), i)
			return false
		}
		defs = append(defs, more...)
		return true
	})
	return defs, err
}

// geminiParts normalises a parts array. names is nil for the system prompt.
func geminiParts(parts gjson.Result, names *rewrite.ToolNames) ([]conv.Block, error) {
	var blocks []conv.Block
	var err error
	jsonkit.EachElement(parts, func(j int, p gjson.Result) bool {
		var blk conv.Block
		if blk, err = geminiPart(p, names); err != nil {
			err = rewrite.AtIndex(err, j)
			return false
		}
		blocks = append(blocks, blk)
		return true
	})
	return blocks, err
}

func geminiPart(p gjson.Result, names *rewrite.ToolNames) (conv.Block, error) {
	if !p.IsObject() {
		return conv.Block{}, rewrite.TypeError("", "an object")
	}
	if t := p.Get("text"); t.Exists() {
		if err := rewrite.WantString(t, "text"); err != nil {
			return conv.Block{}, err
		}
		kind := conv.BlockText
		if p.Get("thought").Bool() {
			kind = conv.BlockThinking
		}
		return conv.Block{Kind: kind, Text: jsonkit.OwnedString(t)}, nil
	}
	if fc, key := either(p, "functionCall", "function_call"); fc.Exists() {
		if err := rewrite.WantObject(fc, key); err != nil {
			return conv.Block{}, err
		}
		blk, err := geminiCall(fc)
		blk.Kind = conv.BlockToolCall
		blk.Args = jsonkit.OwnedRaw(fc.Get("args"))
		if names != nil {
			names.Add(blk.ToolCallID, blk.ToolName)
		}
		return blk, rewrite.AtField(err, key)
	}
	if fr, key := either(p, "functionResponse", "function_response"); fr.Exists() {
		if err := rewrite.WantObject(fr, key); err != nil {
			return conv.Block{}, err
		}
		blk, err := geminiCall(fr)
		blk.Kind = conv.BlockToolResult
		blk.Text = strings.Clone(fr.Get("response").Raw)
		return blk, rewrite.AtField(err, key)
	}
	return conv.Block{Kind: conv.BlockOther}, nil
}

// geminiCall reads the id and name of a functionCall or functionResponse.
func geminiCall(fc gjson.Result) (conv.Block, error) {
	id, name := fc.Get("id"), fc.Get("name")
	if err := rewrite.WantString(id, "id"); err != nil {
		return conv.Block{}, err
	}
	if err := rewrite.WantString(name, "name"); err != nil {
		return conv.Block{}, err
	}
	return conv.Block{ToolCallID: jsonkit.OwnedString(id), ToolName: jsonkit.OwnedString(name)}, nil
}

// ReleaseBody implements rewrite.BodyReleaser.
func (c geminiCodec) ReleaseBody(body []byte) { c.parsed.ReleaseFinal(body) }

// BuildInto is rewrite.BuildTargeter: the request's last edit may build
// its result in the previous request's sent body.
func (c geminiCodec) BuildInto(t *rewrite.BuildTarget) { c.parsed.BuildInto(t) }

// CopyRuns is rewrite.CopyMapper: how the last edit of the request made out.
func (c geminiCodec) CopyRuns(src, out []byte) []rewrite.CopyRun { return c.parsed.CopyRuns(src, out) }

// IndexOf implements rewrite.BodyIndexer.
func (c geminiCodec) IndexOf(body []byte) *jsonkit.Index { return c.parsed.IndexOf(body) }

func (c geminiCodec) ApplyEdits(body []byte, e conv.RequestEdits) ([]byte, error) {
	return rewrite.ApplyEdits(body, e, c.editOps())
}

// ApplyEditsWithUserTexts implements rewrite.UserTextsEditor.
func (c geminiCodec) ApplyEditsWithUserTexts(body []byte, texts []rewrite.UserTexts, e conv.RequestEdits) ([]byte, error) {
	return rewrite.ApplyEditsWithUserTexts(body, texts, e, c.editOps(), c, c)
}

// editOps are the API's edit primitives, through the request's Parsed.
func (c geminiCodec) editOps() rewrite.EditOps {
	return rewrite.EditOps{
		Parsed: c.parsed, ToolsKey: "tools", SystemKey: "systemInstruction", MaxKey: "generationConfig",
		Tools:        geminiDecls,
		AddTools:     geminiAddTools,
		AppendSystem: geminiAppendSystem,
		AppendUser:   geminiAppendUser,
		SetMax:       geminiSetMax,
	}
}

// geminiDecls renders (and remembers) the tool definitions hooks add.
var geminiDecls = rewrite.NewToolRenderer(geminiDecl)

// geminiDecl renders a function declaration.
func geminiDecl(dst []byte, t conv.ToolSpec, params []byte) []byte {
	dst = append(dst, `{"name":`...)
	dst = jsonkit.AppendString(dst, t.Name)
	if t.Description != "" {
		dst = append(dst, `,"description":`...)
		dst = jsonkit.AppendString(dst, t.Description)
	}
	dst = append(dst, `,"parameters":`...)
	dst = append(dst, params...)
	return append(dst, '}')
}

// geminiAddTools appends declarations to the first tools element that has a
// function declarations list, else adds a new tools element holding them.
func geminiAddTools(body, decls []byte) ([]byte, error) {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		return nil, rewrite.ErrNotObject
	}
	tools := jsonkit.Member(root, "tools")
	if !tools.IsArray() {
		return rewrite.AppendToArrayMember(body, "tools", geminiToolElem(decls))
	}
	var list gjson.Result
	jsonkit.EachElement(tools, func(_ int, t gjson.Result) bool {
		if l, _ := either(t, "functionDeclarations", "function_declarations"); l.IsArray() {
			list = l
			return false
		}
		return true
	})
	if list.Exists() {
		return jsonkit.AppendElements(body, list, decls), nil
	}
	return jsonkit.AppendElements(body, tools, geminiToolElem(decls)), nil
}

func geminiToolElem(decls []byte) []byte {
	b := append([]byte(nil), `{"functionDeclarations":[`...)
	b = append(b, decls...)
	return append(b, "]}"...)
}

// geminiTextParts renders each text as a {"text":…} part, comma-separated.
func geminiTextParts(texts []string) []byte {
	var out []byte
	for i, t := range texts {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"text":`...)
		out = jsonkit.AppendString(out, t)
		out = append(out, '}')
	}
	return out
}

// geminiAppendParts appends parts to content's parts array (creating it).
func geminiAppendParts(body []byte, content gjson.Result, parts []byte) ([]byte, error) {
	p := content.Get("parts")
	switch {
	case p.IsArray():
		return jsonkit.AppendElements(body, p, parts), nil
	case jsonkit.IsNull(p):
		return jsonkit.SetMember(body, content, "parts", rewrite.Enclose('[', parts, ']')), nil
	}
	return nil, fmt.Errorf("rewrite: cannot edit parts: not an array")
}

func geminiAppendSystem(body []byte, texts []string) ([]byte, error) {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		return nil, rewrite.ErrNotObject
	}
	parts := geminiTextParts(texts)
	sys, key := either(root, "systemInstruction", "system_instruction")
	switch {
	case sys.IsObject():
		return geminiAppendParts(body, sys, parts)
	case jsonkit.IsNull(sys):
		if !sys.Exists() {
			key = "systemInstruction"
		}
		b := append([]byte(`{"parts":[`), parts...)
		return jsonkit.SetMember(body, root, key, append(b, "]}"...)), nil
	}
	return nil, fmt.Errorf("rewrite: cannot edit systemInstruction: not an object")
}

// geminiAppendUser appends text parts to the last user content (a content
// without role counts as the user's); without one the edit is a no-op.
func geminiAppendUser(body []byte, texts []string) ([]byte, error) {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		return nil, rewrite.ErrNotObject
	}
	c, ok := rewrite.LastWithRole(jsonkit.Member(root, "contents"), "role", "user", true)
	if !ok {
		return body, nil
	}
	return geminiAppendParts(body, c, geminiTextParts(texts))
}

func geminiSetMax(body []byte, n int64) ([]byte, error) {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		return nil, rewrite.ErrNotObject
	}
	num := strconv.AppendInt(nil, n, 10)
	gc, gcKey := either(root, "generationConfig", "generation_config")
	switch {
	case gc.IsObject():
		mot, key := either(gc, "maxOutputTokens", "max_output_tokens")
		if !mot.Exists() {
			key = "maxOutputTokens"
		}
		return jsonkit.SetMember(body, gc, key, num), nil
	case jsonkit.IsNull(gc):
		if !gc.Exists() {
			gcKey = "generationConfig"
		}
		b := append([]byte(`{"maxOutputTokens":`), num...)
		return jsonkit.SetMember(body, root, gcKey, append(b, '}')), nil
	}
	return nil, fmt.Errorf("rewrite: cannot edit generationConfig: not an object")
}

func (geminiCodec) ErrorBody(status int, message string) []byte { return geminiError(status, message) }

func (geminiCodec) StreamErrorEvent(status int, message string) []byte {
	return rewrite.AppendData(nil, geminiError(status, message))
}

func (geminiCodec) SideRequest(body []byte) string {
	return geminiSide(rewrite.TopMembers(body, geminiSideKeys...))
}

// geminiSideKeys are the members geminiSide reads, in its order.
var geminiSideKeys = []string{"tools", "generationConfig", "generation_config", "toolConfig", "tool_config"}

func geminiSide(r []gjson.Result) string {
	camel, snake := r[1], r[2]
	jsonMode := strings.EqualFold(camel.Get("responseMimeType").Str, "application/json") ||
		strings.EqualFold(snake.Get("response_mime_type").Str, "application/json") ||
		rewrite.IsPresent(camel.Get("responseSchema")) || rewrite.IsPresent(camel.Get("responseJsonSchema")) ||
		rewrite.IsPresent(snake.Get("response_schema")) || rewrite.IsPresent(snake.Get("response_json_schema"))
	functions := false
	jsonkit.EachElement(r[0], func(_ int, t gjson.Result) bool {
		functions = rewrite.NonEmptyArray(t.Get("functionDeclarations")) || rewrite.NonEmptyArray(t.Get("function_declarations"))
		return !functions
	})
	return rewrite.FirstSide(
		rewrite.SideIf(jsonMode, rewrite.SideJSONOutput),
		rewrite.SideIf(strings.EqualFold(r[3].Get("functionCallingConfig.mode").Str, "NONE") ||
			strings.EqualFold(r[4].Get("function_calling_config.mode").Str, "NONE"), rewrite.SideToolChoiceNone),
		rewrite.SideIf(!functions, rewrite.SideNoTools),
	)
}
