package rewrite

import (
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// editOps are one API's primitives for the edits of conv.RequestEdits.
// applyEdits runs them in the order the Codec contract fixes.
type editOps struct {
	// renderTool appends one tool definition in the API's shape to dst.
	renderTool func(dst []byte, t conv.ToolSpec, params []byte) []byte
	// addTools inserts the rendered, comma-separated definitions.
	addTools     func(body, items []byte) ([]byte, error)
	appendSystem func(body []byte, texts []string) ([]byte, error)
	appendUser   func(body []byte, texts []string) ([]byte, error)
	setMax       func(body []byte, n int64) ([]byte, error)
}

// applyEdits applies e to body with ops: tools, system, user text, output
// limit. It returns body itself when e is empty.
func applyEdits(body []byte, e conv.RequestEdits, ops editOps) ([]byte, error) {
	if e.Empty() {
		return body, nil
	}
	out := body
	var err error
	if len(e.AddTools) > 0 {
		items, err := renderTools(e.AddTools, ops.renderTool)
		if err != nil {
			return nil, err
		}
		if out, err = ops.addTools(out, items); err != nil {
			return nil, err
		}
	}
	if len(e.AppendSystem) > 0 {
		if out, err = ops.appendSystem(out, e.AppendSystem); err != nil {
			return nil, err
		}
	}
	if len(e.AppendUserText) > 0 {
		if out, err = ops.appendUser(out, e.AppendUserText); err != nil {
			return nil, err
		}
	}
	if e.SetMaxOutputTokens > 0 {
		if out, err = ops.setMax(out, e.SetMaxOutputTokens); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendTools returns an addTools that appends to the top-level array key,
// creating it when absent.
func appendTools(key string) func(body, items []byte) ([]byte, error) {
	return func(body, items []byte) ([]byte, error) { return appendToArrayMember(body, key, items) }
}

// setMaxKey returns a setMax that sets the top-level integer key.
func setMaxKey(key string) func(body []byte, n int64) ([]byte, error) {
	return func(body []byte, n int64) ([]byte, error) { return setTopLevelInt(body, key, n) }
}

// parseMessages builds the view of every element of arr (the array member
// key) with parse, through the view cache views (tagged p; nil: no cache), sharing one tool-name
// table across the conversation. Errors name the element, e.g.
// messages[3].content.
func parseMessages(views *ViewCache, idx *jsonkit.Index, arr gjson.Result, key string, p viewParser, parse func(gjson.Result, *toolNames) (conv.Message, error)) ([]conv.Message, error) {
	r := viewResolver{cache: views, parser: p, parse: parse}
	var msgs []conv.Message
	var err error
	idx.Each(arr, func(i int, m gjson.Result) bool {
		var msg conv.Message
		if msg, err = r.message(m); err != nil {
			err = at(atIndex(err, i), key)
			return false
		}
		msgs = append(msgs, msg)
		return true
	})
	return msgs, err
}
