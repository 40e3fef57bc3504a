package proxy

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/rewrite"
)

// sessionSource says where a session id was found (a log field and metric
// label; never the credential).
type sessionSource string

const (
	sourceHeader      sessionSource = "header"
	sourceClaudeCode  sessionSource = "claude_code_header"
	sourceCodexHeader sessionSource = "codex_header"
	sourceMetadata    sessionSource = "metadata_user_id"
	sourceCacheKey    sessionSource = "prompt_cache_key"
	sourceFingerprint sessionSource = "fingerprint"
	// sourceOpening: no id, and the conversation has no model turn yet. The
	// request runs on a fresh session that is saved under the fingerprint
	// of its continuation (see turn.save).
	sourceOpening sessionSource = "fingerprint_opening"
	sourceNone    sessionSource = "none"
)

// codexSessionHeaders are the conversation headers Codex CLI versions send,
// newest first.
var codexSessionHeaders = []string{"session-id", "session_id", "thread-id"}

// resolveSession finds the session id of a request, in the order of
// design.md: the configured header, X-Claude-Code-Session-Id, the Codex
// headers, Anthropic metadata.user_id (JSON session_id, then the legacy
// "_session_<id>" suffix), prompt_cache_key, and finally the fingerprint of
// the system prompt and the conversation up to its first model turn. hints
// may be nil (pass-through routes: headers only); fingerprint is called only
// when nothing else matched, because it needs the conversation parsed. It
// returns the fingerprint, or opening=true for a conversation that has no
// model turn yet: that request gets a fresh random id (openingSessionID),
// so two runs started with the same prompt never share a session.
func resolveSession(h *fasthttp.RequestHeader, configured string, hints *rewrite.SessionHints, fingerprint func() (fp string, opening bool)) (string, sessionSource) {
	if v := h.Peek(configured); len(v) > 0 {
		return string(v), sourceHeader
	}
	if v := h.Peek("X-Claude-Code-Session-Id"); len(v) > 0 {
		return string(v), sourceClaudeCode
	}
	for _, name := range codexSessionHeaders {
		if v := peekExact(h, name); len(v) > 0 {
			return string(v), sourceCodexHeader
		}
	}
	if hints == nil {
		return "", sourceNone
	}
	if id := sessionFromUserID(hints.MetadataUserID); id != "" {
		return id, sourceMetadata
	}
	if hints.PromptCacheKey != "" {
		return hints.PromptCacheKey, sourceCacheKey
	}
	fp, opening := fingerprint()
	switch {
	case fp != "":
		return fingerprintSessionID(fp), sourceFingerprint
	case opening:
		return openingSessionID(), sourceOpening
	}
	return "", sourceNone
}

// fingerprintSessionID is the session id of a conversation by its
// fingerprint (rewrite: the system prompt and the first model turn).
func fingerprintSessionID(fp string) string { return "fp-" + fp }

// openingSessionID is a fresh, unguessable id for an opening request of a
// client that sends no session id. Nothing is ever stored under it: the
// turn's state is saved under the fingerprint of its continuation.
func openingSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error
	return "fp-open-" + hex.EncodeToString(b[:])
}

// peekExact looks a header up by its exact spelling (case-insensitively),
// so that session_id and session-id stay distinct names.
func peekExact(h *fasthttp.RequestHeader, name string) []byte {
	var found []byte
	for k, v := range h.All() {
		if found == nil && len(k) == len(name) && strings.EqualFold(string(k), name) {
			found = v
		}
	}
	return found
}

// sessionFromUserID extracts a session id from Claude Code's metadata.user_id:
// either a JSON-encoded object with "session_id" (v2.1.78 and later) or the
// legacy "user_<hash>_account_<uuid>_session_<uuid>" form.
func sessionFromUserID(userID string) string {
	if userID == "" {
		return ""
	}
	if strings.HasPrefix(userID, "{") {
		if id := gjson.Get(userID, "session_id").String(); id != "" {
			return id
		}
		return ""
	}
	if i := strings.LastIndex(userID, "_session_"); i >= 0 {
		return userID[i+len("_session_"):]
	}
	return ""
}

// tenantOf returns the tenant namespace of a request: a truncated SHA-256 of
// the credential it carries (x-api-key, Authorization, x-goog-api-key or the
// Gemini ?key= parameter), or "anonymous" without one. The credential itself
// is never kept.
func tenantOf(req *fasthttp.Request) string {
	cred := req.Header.Peek("X-Api-Key")
	if len(cred) == 0 {
		cred = req.Header.Peek("Authorization")
	}
	if len(cred) == 0 {
		cred = req.Header.Peek("X-Goog-Api-Key")
	}
	if len(cred) == 0 {
		cred = req.URI().QueryArgs().Peek("key")
	}
	if len(cred) == 0 {
		return "anonymous"
	}
	// One Sum256 over a stack buffer (a credential fits it): no digest
	// to allocate and clone, as sha256.New and Sum would.
	var buf [256]byte
	sum := sha256.Sum256(append(append(buf[:0], tenantSalt...), cred...))
	var out [32]byte
	hex.Encode(out[:], sum[:16])
	return string(out[:])
}

// tenantSalt prefixes the credential in tenantOf's hash.
const tenantSalt = "shepherd-tenant\x00"
