package rewrite

import (
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
)

// Kinds of side request: requests that are not agent turns (routing
// classifiers, JSON-mode calls, title and summary calls). They are metric
// label values.
const (
	// SideJSONOutput: the request constrains its output to JSON (OpenAI
	// response_format, Responses text.format, Gemini responseMimeType
	// application/json or a response schema, Anthropic output_format).
	SideJSONOutput = "json_output"
	// SideToolChoiceNone: the request forbids tool calls (tool_choice none,
	// Gemini functionCallingConfig mode NONE).
	SideToolChoiceNone = "tool_choice_none"
	// SideNoTools: the request declares no tools the model could call.
	SideNoTools = "no_tools"
)

// SideClassifier is implemented by every codec: it reports the kind of
// side request body is, or "" for an agent turn.
type SideClassifier interface {
	SideRequest(body []byte) string
}

// SideRequest reports whether body, a request of c's API, is a side request
// and of which kind (SideJSONOutput, SideToolChoiceNone, SideNoTools, in
// that order of precedence), or "" for an agent turn. Injecting tools into
// a side request would change what it answers (and Gemini rejects tools
// together with JSON mode). It reads only the few fields it needs and never
// fails: a body that is not a JSON object has no tools.
func SideRequest(c Codec, body []byte) string {
	if s, ok := c.(SideClassifier); ok {
		return s.SideRequest(body)
	}
	return ""
}

// FirstSide returns the first kind that is not "".
func FirstSide(kinds ...string) string {
	for _, k := range kinds {
		if k != "" {
			return k
		}
	}
	return ""
}

// SideIf returns kind when cond holds, else "": one clause of a codec's
// SideRequest, combined with FirstSide.
func SideIf(cond bool, kind string) string {
	if cond {
		return kind
	}
	return ""
}

// NonEmptyArray reports an array with at least one element.
func NonEmptyArray(r gjson.Result) bool {
	found := false
	jsonkit.EachElement(r, func(int, gjson.Result) bool {
		found = true
		return false
	})
	return found
}

// IsPresent reports a value that exists and is not null.
func IsPresent(r gjson.Result) bool { return r.Exists() && r.Type != gjson.Null }

// IsJSONFormat reports a format object of type json_object or json_schema.
func IsJSONFormat(typ gjson.Result) bool {
	return typ.Str == "json_object" || typ.Str == "json_schema"
}

// IndexMembers returns the top-level members named keys from idx, the
// index of a body ParseIndexed accepted: what TopMembers returns for that
// body, without walking it.
func IndexMembers(idx *jsonkit.Index, keys ...string) []gjson.Result {
	out := make([]gjson.Result, len(keys))
	idx.Lookup(keys, out)
	return out
}

// TopMembers returns the top-level members of body named keys, in one pass
// over the body (members); the few nested fields the classifiers read are
// then taken from those small values. body was validated by ParseRequest.
func TopMembers(body []byte, keys ...string) []gjson.Result {
	out := make([]gjson.Result, len(keys))
	if root, err := ParseTrustedRoot(body); err == nil {
		jsonkit.Members(root, keys, out)
	}
	return out
}
