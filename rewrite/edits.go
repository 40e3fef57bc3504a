package rewrite

import (
	"slices"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// EditOps are one API's primitives for the edits of conv.RequestEdits.
// ApplyEdits runs them in the order the Codec contract fixes.
type EditOps struct {
	// RenderTool appends one tool definition in the API's shape to dst.
	RenderTool func(dst []byte, t conv.ToolSpec, params []byte) []byte
	// AddTools inserts the rendered, comma-separated definitions.
	AddTools     func(body, items []byte) ([]byte, error)
	AppendSystem func(body []byte, texts []string) ([]byte, error)
	AppendUser   func(body []byte, texts []string) ([]byte, error)
	SetMax       func(body []byte, n int64) ([]byte, error)
}

// ApplyEdits applies e to body with ops: tools, system, user text, output
// limit. It returns body itself when e is empty.
func ApplyEdits(body []byte, e conv.RequestEdits, ops EditOps) ([]byte, error) {
	if e.Empty() {
		return body, nil
	}
	out := body
	var err error
	if len(e.AddTools) > 0 {
		items, err := renderTools(e.AddTools, ops.RenderTool)
		if err != nil {
			return nil, err
		}
		if out, err = ops.AddTools(out, items); err != nil {
			return nil, err
		}
	}
	if len(e.AppendSystem) > 0 {
		if out, err = ops.AppendSystem(out, e.AppendSystem); err != nil {
			return nil, err
		}
	}
	if len(e.AppendUserText) > 0 {
		if out, err = ops.AppendUser(out, e.AppendUserText); err != nil {
			return nil, err
		}
	}
	if e.SetMaxOutputTokens > 0 {
		if out, err = ops.SetMax(out, e.SetMaxOutputTokens); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// AppendTools returns an AddTools that appends to the top-level array key,
// creating it when absent.
func AppendTools(key string) func(body, items []byte) ([]byte, error) {
	return func(body, items []byte) ([]byte, error) { return AppendToArrayMember(body, key, items) }
}

// SetMaxKey returns a SetMax that sets the top-level integer key.
func SetMaxKey(key string) func(body []byte, n int64) ([]byte, error) {
	return func(body []byte, n int64) ([]byte, error) { return SetTopLevelInt(body, key, n) }
}

// ParseMessages builds the view of every element of arr (the array member
// key of b) with parse, through the view cache of b (tagged p; none: no
// cache), sharing one tool-name table across the conversation. Errors name
// the element, e.g. messages[3].content.
//
// When the index memo keeps b (a long body), the elements that b shares
// byte for byte with the conversation's previous body are that body's
// views, not looked up again, and ParseMessages also returns the messages'
// anchors (conv.Anchors; nil otherwise), computed only for the new ones.
// The returned slices are shared with the memo: read-only (appending to
// them is fine: their capacity is their length).
func ParseMessages(b *Body, arr gjson.Result, key string, p ViewParser, parse func(gjson.Result, *ToolNames) (conv.Message, error)) ([]conv.Message, []string, error) {
	return b.parseElems(arr, key, p, parse, true)
}

// ParseElements is ParseMessages for an API whose messages are not its
// elements one for one (the caller merges views): no anchors, and the
// returned slice is the caller's to modify.
func ParseElements(b *Body, arr gjson.Result, key string, p ViewParser, parse func(gjson.Result, *ToolNames) (conv.Message, error)) ([]conv.Message, error) {
	msgs, _, err := b.parseElems(arr, key, p, parse, false)
	if b.entry != nil {
		msgs = slices.Clone(msgs)
	}
	return msgs, err
}
