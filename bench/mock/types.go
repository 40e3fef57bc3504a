package mock

import (
	"net/http"
	"time"
)

// Reply describes one model reply in provider-neutral terms. The same Reply
// renders as an Anthropic message, an OpenAI chat completion, an OpenAI
// response or a Gemini GenerateContentResponse depending on the path it is
// served on, as JSON or as a stream depending on the request.
//
// Durations and sizes left at zero fall back to the server's Options; a
// negative value forces zero for this reply.
type Reply struct {
	// ID is the message / completion / response id, used verbatim. When empty
	// the id is derived from the server's request counter ("msg_mock000001").
	// Tool and item ids that are not scripted are derived from it too.
	ID string
	// Model overrides the model name echoed from the request.
	Model string

	// Text is the assistant text, split into deltas of ChunkSize characters
	// when streamed. When empty and PadText (here or in Options) is set, that
	// many bytes of lorem ipsum are generated instead.
	Text string
	// PadText overrides Options.PadText for this reply.
	PadText int
	// Thinking, when set, adds a reasoning block before the text.
	Thinking *Thinking
	// ToolCalls are emitted after the text, in order.
	ToolCalls []ToolCall

	// Stop is the neutral stop reason: "end", "tool_use", "max_tokens",
	// "stop_sequence", "refusal" or "pause_turn". Any other non-empty value is
	// passed through verbatim to every API. Empty means "tool_use" when there
	// are tool calls, else "end".
	Stop string
	// StopSequence is reported with Stop "stop_sequence" (Anthropic only).
	StopSequence string
	// Usage is reported as scripted; zero Input / Output are estimated (request
	// body length / 4, generated characters / 4).
	Usage Usage

	// Status, when non-zero and not 200, makes the reply an HTTP error in the
	// API's own error shape (also for stream requests, as the real APIs do).
	Status int
	// ErrorType overrides the API-specific error type (Anthropic error.type,
	// OpenAI error.type / Responses error code, Gemini error.status).
	ErrorType string
	// ErrorMessage is the error message for Status errors and mid-stream errors.
	ErrorMessage string
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string

	// ErrorAfterEvents > 0: after that many stream events, send the API's
	// stream error event and end the stream (cleanly, at the HTTP level).
	// A negative value sends the error as the first event.
	ErrorAfterEvents int
	// CutAfterEvents > 0: after that many stream events, drop the connection
	// without a terminal event and without the final HTTP chunk. A negative
	// value cuts right after the headers.
	CutAfterEvents int

	// Headers are added to the response (after the mock's own headers).
	Headers map[string]string

	// Per-reply timing and chunking overrides (see Options).
	TTFT            time.Duration
	InterEventDelay time.Duration
	HeaderDelay     time.Duration
	Hold            time.Duration
	PingEvery       time.Duration
	ChunkSize       int
}

// Thinking is a reasoning block: Anthropic thinking (thinking_delta +
// signature_delta), Responses reasoning item (summary text, signature as
// encrypted_content), Gemini thought part (signature as thoughtSignature,
// base64 of the Signature bytes), Chat Completions reasoning_content.
type Thinking struct {
	Text      string
	Signature string
}

// ToolCall is one function call. Args is the JSON text of the arguments; it is
// sent verbatim where the API carries arguments as a string and compacted
// where it carries an object (empty or invalid JSON becomes {} there).
type ToolCall struct {
	ID   string
	Name string
	Args string
	// Custom makes the call a free-form (custom) tool call on the Responses
	// API: a custom_tool_call item (id ctc_<key>_<i>) whose input is Args
	// verbatim, plain text rather than JSON (empty stays empty), streamed as
	// response.custom_tool_call_input.delta events and a .done event. The
	// other APIs have no such calls and send it as a function call.
	Custom bool
}

// Usage is token accounting in Anthropic terms: Input excludes cached tokens.
// OpenAI and Gemini report prompt tokens as Input+CacheRead+CacheWrite, with
// CacheRead as the cached count. Reasoning is the part of Output spent on
// thinking (reported where the API has a field for it).
type Usage struct {
	Input      int
	Output     int
	CacheRead  int
	CacheWrite int
	Reasoning  int
}

// Options configures a Server.
type Options struct {
	// Addr to listen on in Start; default "127.0.0.1:0".
	Addr string
	// Default is served when the script queue is empty; default Text "ok".
	Default Reply
	// Named scripts, selected per request with the X-Mock-Script header and
	// cycled through independently of the FIFO queue.
	Named map[string][]Reply
	// Responder, when set, is asked first for the reply to every model
	// request without X-Mock-Script (after it is recorded): it returns the
	// reply and true, or false to fall back to the FIFO queue and Default.
	// It lets a test answer a real agent by what the request holds (its side
	// requests, the tool results it sends back) rather than by arrival
	// order. It is called concurrently and must not block.
	Responder func(req Recorded) (Reply, bool)

	// TTFT is the delay before the first byte of a JSON body, or before the
	// first event of a stream (stream headers are sent at once).
	TTFT time.Duration
	// InterEventDelay is the delay between stream events.
	InterEventDelay time.Duration
	// HeaderDelay is the delay before the response headers are sent.
	HeaderDelay time.Duration
	// ChunkSize is the number of characters (runes) per text / thinking /
	// arguments delta; default 16; negative sends each in a single delta.
	ChunkSize int
	// PadText generates that many bytes of lorem text for replies whose Text
	// is empty.
	PadText int
	// Hold keeps a stream open after its first event (its first HoldAfter
	// events, when HoldAfter > 1) for this long before continuing, sending
	// a keep-alive every PingEvery: an Anthropic ping event, an SSE comment
	// for OpenAI, nothing for Gemini (its SDK rejects anything but data
	// lines).
	Hold      time.Duration
	HoldAfter int
	PingEvery time.Duration

	// StampText replaces the text of every streamed Anthropic text_delta and
	// Chat Completions content delta with the time the mock hands that event
	// to the connection: the Unix time in nanoseconds as 19 digits, padded
	// with spaces to ChunkSize characters when ChunkSize is larger. The
	// number of deltas and the rest of the stream keep their shape (one
	// delta per ChunkSize characters of the text); JSON replies and the
	// other APIs are unchanged. With an InterEventDelay every event is
	// written and flushed on its own, so a client can compute each event's
	// one-way delay (see ParseStamp).
	StampText bool

	// GeminiLF frames Gemini SSE events with "\n\n" instead of the
	// "\r\n\r\n" Google sends.
	GeminiLF bool

	// NoRecord disables request recording (for load tests).
	NoRecord bool
	// Gate, when set, must deliver a value before each stream event after the
	// first one (keep-alive pings excepted).
	Gate chan struct{}

	// Created is the fixed timestamp used for created / created_at fields;
	// default 1700000000.
	Created int64
	// CountTokens is the input_tokens answered by count_tokens endpoints;
	// default request body length / 4.
	CountTokens int
	// Models lists model ids for the GET model-list endpoints.
	Models []string

	// PromptCache models the providers' prompt caching (cache.go): a
	// reply whose scripted Usage sets no Input, CacheRead or CacheWrite
	// reports the cache read and write its request would get, and the
	// input without them. PromptCacheTTL is how long a cached prefix lives
	// unused (default DefaultPromptCacheTTL).
	PromptCache    bool
	PromptCacheTTL time.Duration
}

// Recorded is one request received by the mock.
type Recorded struct {
	Method string
	Path   string
	Query  string // raw query, without '?'
	Header http.Header
	Body   []byte
	Time   time.Time
	// API is "anthropic", "anthropic_count_tokens", "chat", "responses",
	// "gemini", "gemini_count_tokens", "models" or "" (unknown route).
	API string
	// Stream reports whether the request asked for a streamed reply.
	Stream bool
	// Script is the X-Mock-Script header value, if any.
	Script string
}
