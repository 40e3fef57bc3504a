// Package rewrite is the shared machinery of the wire APIs shepherd
// proxies: the interfaces through which shepherd's provider-neutral views
// (package rewrite/conv) are read from and edited into the wire formats
// (Codec, TurnCodec, ContinueCodec, StreamDecoder, StreamSplicer), the
// Descriptor type, the SSE reader and writer, the seam filter, the view
// cache, and the edit helpers more than one API uses. Codecs read request
// and reply bodies with gjson, apply hook edits to the original bytes (never
// re-marshalling a body), decode SSE streams event by event, splice the
// streams of a turn shepherd continues, and render errors in each API's own
// shape.
//
// Each wire API is a package under rewrite/ (anthropic, openaichat,
// responses, gemini) exporting one Descriptor (its name and config key,
// routes, codec, stream splicer, terminal events, top-level request shape);
// the table of all of them is package rewrite/apis. Callers pick a
// descriptor by route once and work with conv views, Codecs and
// StreamEvents from then on; nothing outside the descriptors switches on
// an API. The byte-level JSON helpers live in rewrite/jsonkit.
package rewrite

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// ErrMalformed is wrapped by every request-parsing error caused by the
// client's body (invalid JSON, a field of the wrong type). The wrapping
// error's text names the field and never quotes body content, so it can be
// shown to the client in a 400.
var ErrMalformed = errors.New("rewrite: malformed request body")

// ErrMalformedReply is wrapped by errors about bodies and stream events that
// came from upstream (invalid JSON, not an object, broken array framing).
// It is the upstream's fault, never the client's.
var ErrMalformedReply = errors.New("rewrite: malformed upstream reply")

// Codec knows one wire API. Implementations are stateless and safe for
// concurrent use; per-stream state lives in the StreamDecoder they create.
type Codec interface {
	// ParseRequest validates body (once, with jsonkit.Valid) and builds the
	// read-only view hooks see. Invalid JSON, a top level that is not an
	// object, or a field of the wrong type for what the view or ApplyEdits
	// needs (messages not an array, max_tokens not a number, stream not a
	// bool, ...) gives an error wrapping ErrMalformed that names the field.
	// JSON null is treated as absent. The view never aliases body.
	ParseRequest(body []byte) (*conv.Request, error)

	// ApplyEdits returns body with e applied to the original bytes: every byte
	// outside the edited spots stays identical, nothing is re-marshalled. It
	// returns body itself when e is empty; otherwise a new slice (body is
	// never modified, so it can be reused for retries). Edits are applied in
	// the fixed order tools, system, user text, output limit, and the result
	// is a pure function of (body, e). body must have passed ParseRequest;
	// an edit that finds an unexpected shape returns an error rather than
	// producing invalid JSON.
	ApplyEdits(body []byte, e conv.RequestEdits) ([]byte, error)

	// ParseReply parses a complete non-streaming reply body into a view. A
	// body that is not a JSON object gives an error wrapping
	// ErrMalformedReply. The view never aliases body.
	ParseReply(body []byte) (*conv.Reply, error)

	// NewStreamDecoder returns a decoder for one streamed reply. It holds
	// per-stream state and is not safe for concurrent use.
	NewStreamDecoder() StreamDecoder

	// ErrorBody renders message as a JSON error body in this API's own shape
	// for HTTP status (error type or status string chosen from status).
	ErrorBody(status int, message string) []byte

	// StreamErrorEvent renders message as one complete SSE event (terminated
	// by a blank line) in this API's mid-stream error style.
	StreamErrorEvent(status int, message string) []byte

	// Every codec rebuilds conversations for the turn engine and the ledger.
	TurnCodec
}

// ReplyCallsParser is implemented by the codecs that can view a JSON reply
// without its text: ParseReplyCalls is ParseReply with Reply.Text left
// empty, never decoded. The turn engine uses it when no hook of the chain
// reads the text (hooks.ReplyTextReader): decoding the text was the
// largest allocation of a turn (a copy of it, unescaped).
type ReplyCallsParser interface {
	ParseReplyCalls(body []byte) (*conv.Reply, error)
}

// Fingerprint is the session key of a conversation whose client sends no
// session id (gemini-cli, Cline, most SDK apps): a hash of the system
// prompt and of the anchor (conv.Anchors) of the conversation's first
// assistant message, which covers every message up to it. It is "" while
// the conversation has no assistant message (an opening request): two runs
// started with the same prompt are told apart only by the model's first
// reply, so an opening request must never share another conversation's
// state; the proxy gives it a fresh session and saves that under the key of
// its continuation once the reply is known. Anchors ignore what clients
// add to the history they send back (call ids, cache_control, thinking,
// argument formatting), so every later request of the conversation finds
// the same key.
func Fingerprint(system string, msgs []conv.Message) string {
	first := -1
	for i := range msgs {
		if msgs[i].Role == conv.RoleAssistant {
			first = i
			break
		}
	}
	if first < 0 {
		return ""
	}
	h := fingerprintPrompts.after(system)
	h.Write([]byte(conv.Anchors(msgs[:first+1])[first]))
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// Fingerprinter is a codec that computes a request's fingerprint without
// building the view of the whole conversation.
type Fingerprinter interface {
	FingerprintRequest(body []byte) (string, error)
}

// RequestFingerprint returns ParseRequest(body).Fingerprint, or "" when
// ParseRequest fails: the session fingerprint of a request on the
// pass-through path. It checks every message as ParseRequest does, but
// builds the view only of the messages the fingerprint reads.
func RequestFingerprint(c Codec, body []byte) string {
	if f, ok := c.(Fingerprinter); ok {
		fp, err := f.FingerprintRequest(body)
		if err != nil {
			return ""
		}
		return fp
	}
	v, err := c.ParseRequest(body)
	if err != nil {
		return ""
	}
	return v.Fingerprint
}

// ToolNames records the tool name of each call id seen so far in a
// conversation, so tool results can carry the name where the API omits it.
type ToolNames map[string]string

func (t *ToolNames) Add(id, name string) {
	if id == "" || name == "" {
		return
	}
	if *t == nil {
		*t = make(ToolNames)
	}
	(*t)[id] = name
}
