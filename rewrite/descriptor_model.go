package rewrite

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// ErrModelName is returned by SetModel for a model name the API cannot
// carry where it names its model (a path segment takes letters, digits and
// . _ - @ only).
var ErrModelName = errors.New("rewrite: model name cannot be set on this API")

// RequestModel is the model a request of this API names: the path's
// models/{model} segment when ModelInPath, else the body's top-level
// "model" string ("" when there is none).
func (d *Descriptor) RequestModel(path, body []byte) string {
	if d.ModelInPath {
		if i, j, ok := pathModel(path); ok {
			return string(path[i:j])
		}
		return ""
	}
	return gjson.GetBytes(body, "model").String()
}

// SetModel returns the request's path and body naming model instead of the
// model the agent asked for: the path's models/{model} segment when
// ModelInPath (the body is returned as is), else the body's top-level
// "model" member (the path is returned as is). The inputs are not
// modified.
func (d *Descriptor) SetModel(path, body []byte, model string) ([]byte, []byte, error) {
	if !d.ModelInPath {
		out, err := sjson.SetBytes(body, "model", model)
		if err != nil {
			return nil, nil, fmt.Errorf("rewrite: setting the model: %w", err)
		}
		return path, out, nil
	}
	if !pathSafeModel(model) {
		return nil, nil, fmt.Errorf("%w: %q", ErrModelName, model)
	}
	i, j, ok := pathModel(path)
	if !ok {
		return nil, nil, fmt.Errorf("%w: the path names no model", ErrModelName)
	}
	out := make([]byte, 0, len(path)-(j-i)+len(model))
	out = append(out, path[:i]...)
	out = append(out, model...)
	out = append(out, path[j:]...)
	return out, body, nil
}

// pathModel finds the model segment of a model path: after the last
// "/models/", up to the method's ":" (or the end).
func pathModel(path []byte) (start, end int, ok bool) {
	k := bytes.LastIndex(path, modelsSegment)
	if k < 0 {
		return 0, 0, false
	}
	start = k + len(modelsSegment)
	end = start + bytes.IndexByte(path[start:], ':')
	if end < start {
		end = len(path)
	}
	return start, end, end > start
}

// pathSafeModel reports whether model can stand in a path segment as is.
func pathSafeModel(model string) bool {
	if model == "" {
		return false
	}
	for _, c := range []byte(model) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-', c == '@':
		default:
			return false
		}
	}
	return true
}
