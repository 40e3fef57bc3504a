package rewrite

import (
	"strings"

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

// sideClassifier is implemented by every codec: it reports the kind of
// side request body is, or "" for an agent turn.
type sideClassifier interface {
	sideRequest(body []byte) string
}

// SideRequest reports whether body, a request of c's API, is a side request
// and of which kind (SideJSONOutput, SideToolChoiceNone, SideNoTools, in
// that order of precedence), or "" for an agent turn. Injecting tools into
// a side request would change what it answers (and Gemini rejects tools
// together with JSON mode). It reads only the few fields it needs and never
// fails: a body that is not a JSON object has no tools.
func SideRequest(c Codec, body []byte) string {
	if s, ok := c.(sideClassifier); ok {
		return s.sideRequest(body)
	}
	return ""
}

// firstSide returns the first kind that is not "".
func firstSide(kinds ...string) string {
	for _, k := range kinds {
		if k != "" {
			return k
		}
	}
	return ""
}

func when(cond bool, kind string) string {
	if cond {
		return kind
	}
	return ""
}

// nonEmptyArray reports an array with at least one element.
func nonEmptyArray(r gjson.Result) bool {
	return r.IsArray() && len(r.Array()) > 0
}

// present reports a value that exists and is not null.
func present(r gjson.Result) bool { return r.Exists() && r.Type != gjson.Null }

// jsonFormat reports a format object of type json_object or json_schema.
func jsonFormat(typ gjson.Result) bool {
	return typ.Str == "json_object" || typ.Str == "json_schema"
}

func (anthropicCodec) sideRequest(body []byte) string {
	r := gjson.GetManyBytes(body, "tools", "tool_choice.type", "output_format.type", "output_config.format.type")
	return firstSide(
		when(r[2].Str == "json_schema" || r[3].Str == "json_schema", SideJSONOutput),
		when(r[1].Str == "none", SideToolChoiceNone),
		when(!nonEmptyArray(r[0]), SideNoTools),
	)
}

func (chatCodec) sideRequest(body []byte) string {
	r := gjson.GetManyBytes(body, "tools", "functions", "tool_choice", "function_call", "response_format.type")
	return firstSide(
		when(jsonFormat(r[4]), SideJSONOutput),
		when(r[2].Str == "none" || (r[3].Str == "none" && !present(r[2])), SideToolChoiceNone),
		when(!nonEmptyArray(r[0]) && !nonEmptyArray(r[1]), SideNoTools),
	)
}

func (responsesCodec) sideRequest(body []byte) string {
	r := gjson.GetManyBytes(body, "tools", "tool_choice", "text.format.type")
	return firstSide(
		when(jsonFormat(r[2]), SideJSONOutput),
		when(r[1].Str == "none", SideToolChoiceNone),
		when(!nonEmptyArray(r[0]), SideNoTools),
	)
}

func (geminiCodec) sideRequest(body []byte) string {
	r := gjson.GetManyBytes(body, "tools",
		"generationConfig.responseMimeType", "generation_config.response_mime_type",
		"generationConfig.responseSchema", "generationConfig.responseJsonSchema",
		"generation_config.response_schema", "generation_config.response_json_schema",
		"toolConfig.functionCallingConfig.mode", "tool_config.function_calling_config.mode")
	jsonMode := strings.EqualFold(r[1].Str, "application/json") || strings.EqualFold(r[2].Str, "application/json") ||
		present(r[3]) || present(r[4]) || present(r[5]) || present(r[6])
	functions := false
	for _, t := range r[0].Array() {
		if nonEmptyArray(t.Get("functionDeclarations")) || nonEmptyArray(t.Get("function_declarations")) {
			functions = true
			break
		}
	}
	return firstSide(
		when(jsonMode, SideJSONOutput),
		when(strings.EqualFold(r[7].Str, "NONE") || strings.EqualFold(r[8].Str, "NONE"), SideToolChoiceNone),
		when(!functions, SideNoTools),
	)
}
