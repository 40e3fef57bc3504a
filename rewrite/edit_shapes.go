package rewrite

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// This file holds the view and edit helpers several codecs share: tool and
// text rendering, and edits of common shapes (a top-level array, a message's
// content list, a top-level number).

// TextItems renders each text as a {"type":typ,"text":…} object,
// comma-separated.
func TextItems(typ string, texts []string) []byte {
	var out []byte
	for i, t := range texts {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"type":`...)
		out = jsonkit.AppendString(out, typ)
		out = append(out, `,"text":`...)
		out = jsonkit.AppendString(out, t)
		out = append(out, '}')
	}
	return out
}

// AppendToArrayMember appends items to the top-level array member key,
// creating it when absent or null.
func AppendToArrayMember(body []byte, key string, items []byte) ([]byte, error) {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		return nil, ErrNotObject
	}
	arr := jsonkit.Member(root, key)
	switch {
	case arr.IsArray():
		return jsonkit.AppendElements(body, arr, items), nil
	case jsonkit.IsNull(arr):
		return jsonkit.SetMember(body, root, key, Enclose('[', items, ']')), nil
	}
	return nil, fmt.Errorf("rewrite: cannot edit %s: not an array", key)
}

// SetTopLevelInt sets the top-level member key to n.
func SetTopLevelInt(body []byte, key string, n int64) ([]byte, error) {
	if _, ok := jsonkit.RootObject(jsonkit.UnsafeString(body)); !ok {
		return nil, ErrNotObject
	}
	return sjson.SetBytes(body, key, n)
}

// ErrNotObject is the error of an edit of a body that is not a JSON object.
var ErrNotObject = fmt.Errorf("rewrite: cannot edit a body that is not a JSON object")

// Enclose returns open + b + close.
func Enclose(open byte, b []byte, close byte) []byte {
	out := make([]byte, 0, len(b)+2)
	out = append(out, open)
	out = append(out, b...)
	return append(out, close)
}

// LastWithRole returns the last object in arr whose member key equals role
// (or, when missingMatches, lacks the member).
func LastWithRole(arr gjson.Result, key, role string, missingMatches bool) (gjson.Result, bool) {
	var last gjson.Result
	found := false
	jsonkit.EachElement(arr, func(_ int, m gjson.Result) bool {
		if !m.IsObject() {
			return true
		}
		r := m.Get(key)
		if (r.Type == gjson.String && r.Str == role) || (missingMatches && jsonkit.IsNull(r)) {
			last, found = m, true
		}
		return true
	})
	return last, found
}

// AppendContentParts appends parts (rendered, comma-separated objects) to
// the content member key of msg. String content is first turned into a part
// list whose first part is strPrefix + the original string literal + "}", so
// the original text keeps its exact bytes.
func AppendContentParts(body []byte, msg gjson.Result, key string, parts []byte, strPrefix string) ([]byte, error) {
	c := msg.Get(key)
	switch {
	case c.Type == gjson.String:
		return jsonkit.Splice(body, c.Index, jsonkit.ValueEnd(c), []byte{'['}, []byte(strPrefix), []byte(c.Raw), []byte("},"), parts, []byte{']'}), nil
	case c.IsArray():
		return jsonkit.AppendElements(body, c, parts), nil
	case jsonkit.IsNull(c):
		return jsonkit.SetMember(body, msg, key, Enclose('[', parts, ']')), nil
	}
	return nil, fmt.Errorf("rewrite: cannot edit message %s: unexpected type", key)
}

// NamedTools lists the names of a tools array whose elements carry the
// member key (elements without one, such as some built-in tools, are
// skipped). idx, when not nil, indexes the body tools is a root member of.
func NamedTools(idx *jsonkit.Index, tools gjson.Result, key string) ([]conv.ToolDef, error) {
	var defs []conv.ToolDef
	var err error
	keys := []string{key}
	idx.Each(tools, func(i int, t gjson.Result) bool {
		if !t.IsObject() {
			err = AtIndex(TypeError("", "an object"), i)
			return false
		}
		var m [1]gjson.Result
		jsonkit.Members(t, keys, m[:])
		n := m[0]
		if err = AtIndex(WantString(n, key), i); err != nil {
			return false
		}
		if n.Str != "" {
			if defs == nil {
				defs = make([]conv.ToolDef, 0, 32) // Claude Code declares about 20
			}
			defs = append(defs, conv.ToolDef{Name: jsonkit.Name(n)})
		}
		return true
	})
	return defs, err
}

// ResultText returns the text of tool-result content: a string, or the text
// of the parts whose type is typ, joined by newlines.
func ResultText(c gjson.Result, typ, key string) string {
	if c.Type == gjson.String {
		return jsonkit.OwnedString(c)
	}
	var b strings.Builder
	jsonkit.EachElement(c, func(_ int, p gjson.Result) bool {
		if p.Get("type").Str == typ {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p.Get(key).String())
		}
		return true
	})
	return b.String()
}
