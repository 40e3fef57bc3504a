package rewrite

import "bytes"

// Descriptor is everything shepherd knows about one wire API: its config
// key, the routes it serves, how to parse and edit its bodies, how its
// streams end and splice, whether a cut reply can be continued, and the
// shape of its errors. Each API is a package under rewrite/ (anthropic,
// openaichat, responses, gemini) exporting one Descriptor from its api.go;
// the table in package rewrite/apis lists them all. An API package imports
// this package and no other API package. Code that needs an API looks it up there or gets it from
// the route it serves; nothing switches on API names.
//
// A Descriptor is immutable once registered and safe for concurrent use.
type Descriptor struct {
	// Name is the API's config key and metric label ("anthropic",
	// "openai_chat", "openai_responses", "gemini").
	Name string

	// Provider is the upstream family whose clients speak the API
	// ("anthropic", "openai", "gemini"): the upstream a request on one of
	// Routes goes to.
	Provider string

	// ProviderErrors is true for the API whose error shape the provider's
	// clients expect on routes shepherd does not parse (pass-through,
	// refusals before routing): exactly one API per Provider sets it.
	ProviderErrors bool

	// Routes are the model routes the API serves.
	Routes []Route

	// NewCodec returns the API's codec, parsing conversations through views
	// (nil: no view cache). The codec also implements TurnCodec, and
	// ContinueCodec when the API supports continuation.
	NewCodec func(views *ViewCache) Codec

	// NewSplicer returns a stream splicer for one turn; nil when the API's
	// streams cannot be spliced (tool calls answered by shepherd then pass
	// through unanswered on streamed turns).
	NewSplicer func() StreamSplicer

	// IsTerminal reports whether an event of this name and data is one
	// after which the API's stream may end (IsTerminalEvent). It takes the
	// event's fields rather than the event so that forwarding, which calls
	// it for every event, allocates nothing.
	IsTerminal func(name, data []byte) bool

	// TopLevel lists the top-level request members whose JSON type
	// PeekRequest checks: the structure of the wire API, not the content.
	TopLevel map[string]JSONKind

	// Conversation is the top-level request member that holds the
	// conversation ("messages", "input", "contents"): the index memo keys
	// a body by its first elements (ParseBody).
	Conversation string

	// KeepAlive is what a stream writer sends between events while it
	// holds a reply (a call waiting for approval), so the connection stays
	// open: bytes the API's clients ignore, with "\n" line endings. nil
	// sends the SSE comment line ": keepalive"; empty sends nothing (the
	// API's clients ignore nothing between events).
	KeepAlive []byte

	// ModelInPath is true when a request names its model in the path
	// (…/models/{model}:method) rather than in the body's top-level
	// "model" member (RequestModel, SetModel).
	ModelInPath bool

	// Credential is where the API's clients send their credential: the
	// header a credential shepherd substitutes (a routing upstream's
	// credential_env) is written to.
	Credential Credential
}

// Credential names the request header an API's credential travels in and
// the prefix of its value ("Bearer " for Authorization).
type Credential struct {
	Header string
	Prefix string
}

// Route is one model route of a wire API: a POST on an exact path, or on a
// model path (/v1beta/…/models/… or /v1/…/models/…) ending in ModelMethod.
type Route struct {
	// Name is the route's metrics and log label (messages, count_tokens,
	// chat_completions, responses, generate_content, stream_generate_content).
	Name string
	// Path is the exact path of the route; "" when ModelMethod is set.
	Path string
	// ModelMethod is the suffix of a model path (":generateContent").
	ModelMethod string
	// StreamByPath is true when the route alone asks for a stream (Gemini
	// :streamGenerateContent) instead of the body's "stream" member; such a
	// stream is a JSON array unless the query has alt=sse.
	StreamByPath bool
	// NoTurn is true when the route's reply is no model turn (token
	// counting): its body is only peeked for session hints, and neither
	// the hook chain nor the turn engine runs on it.
	NoTurn bool
}

var (
	prefixV1      = []byte("/v1/")
	prefixV1beta  = []byte("/v1beta/")
	modelsSegment = []byte("/models/")
)

// Matches reports whether a POST on path is a request of route r.
func (r *Route) Matches(path []byte) bool {
	if r.Path != "" {
		return string(path) == r.Path
	}
	return r.ModelMethod != "" &&
		(bytes.HasPrefix(path, prefixV1beta) || bytes.HasPrefix(path, prefixV1)) &&
		bytes.Contains(path, modelsSegment) && bytes.HasSuffix(path, []byte(r.ModelMethod))
}

// Codec returns the API's codec without a view cache: for error shapes and
// anything that does not parse conversations repeatedly.
func (d *Descriptor) Codec() Codec { return d.NewCodec(nil) }

// ErrorBody renders message as a JSON error body in the API's own shape.
func (d *Descriptor) ErrorBody(status int, message string) []byte {
	return d.Codec().ErrorBody(status, message)
}

// CanContinue reports whether the API's codec and stream splicer both
// support truncation recovery.
func (d *Descriptor) CanContinue() bool {
	if _, ok := d.Codec().(ContinueCodec); !ok || d.NewSplicer == nil {
		return false
	}
	_, ok := d.NewSplicer().(ContinueSplicer)
	return ok
}

// JSONKind is the JSON type a top-level request member must have (absent
// and null are always accepted).
type JSONKind uint8

// The kinds PeekRequest checks.
const (
	KindString JSONKind = iota + 1
	KindNumber
	KindBool
	KindArray
	KindObject
	KindStringOrArray // the string-or-blocks shape of message content
)

// String returns the API's name.
func (d *Descriptor) String() string { return d.Name }
