package rewrite

import (
	"errors"
	"strings"
	"sync"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// ToolRenderer renders tool definitions (conv.ToolSpec) in one API's shape
// and remembers what it rendered: the hooks add the same few tools to every
// request (topics' and intents' own), whose descriptions and schemas run to
// kilobytes that would otherwise be escaped and validated again each time.
// A remembered rendering is used only for a spec equal to the one it was
// made from (name, description and parameters compared whole), so it is
// always what rendering anew would give. At most maxRenderedTools specs are
// kept; past that the memory starts over. Safe for concurrent use.
type ToolRenderer struct {
	render func(dst []byte, t conv.ToolSpec, params []byte) []byte

	mu   sync.RWMutex
	memo map[toolKey][]byte
}

// maxRenderedTools bounds a ToolRenderer's memory (specs, not bytes: the
// specs hooks add are few and fixed by configuration).
const maxRenderedTools = 64

// toolKey is a spec's content.
type toolKey struct{ name, desc, params string }

// NewToolRenderer returns a ToolRenderer that renders one definition with
// render (appending to dst; params is the validated parameter schema).
func NewToolRenderer(render func(dst []byte, t conv.ToolSpec, params []byte) []byte) *ToolRenderer {
	return &ToolRenderer{render: render, memo: map[toolKey][]byte{}}
}

// Render appends the definitions of tools to dst, comma-separated. It
// fails when a tool has no name or parameters that are not a JSON object.
func (r *ToolRenderer) Render(dst []byte, tools []conv.ToolSpec) ([]byte, error) {
	for i, t := range tools {
		one, err := r.one(t)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, one...)
	}
	return dst, nil
}

// one is t's definition, remembered or rendered (and then remembered).
func (r *ToolRenderer) one(t conv.ToolSpec) ([]byte, error) {
	k := toolKey{t.Name, t.Description, jsonkit.UnsafeString(t.Parameters)}
	r.mu.RLock()
	out, ok := r.memo[k]
	r.mu.RUnlock()
	if ok {
		return out, nil
	}
	if t.Name == "" {
		return nil, errors.New("rewrite: a tool to add has no name")
	}
	p, err := toolParams(t.Name, t.Parameters)
	if err != nil {
		return nil, err
	}
	out = r.render(nil, t, p)
	// The key outlives the call: it must not share the caller's memory.
	k = toolKey{strings.Clone(t.Name), strings.Clone(t.Description), string(t.Parameters)}
	r.mu.Lock()
	if len(r.memo) >= maxRenderedTools {
		clear(r.memo)
	}
	r.memo[k] = out
	r.mu.Unlock()
	return out, nil
}
