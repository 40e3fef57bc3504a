package config

import (
	"regexp"
	"strconv"
	"strings"
)

// Credential patterns RedactText masks. Each keeps its prefix (group 1) and
// replaces what follows with Mask.
var credentialPatterns = []*regexp.Regexp{
	// A credential header quoted in raw HTTP bytes or a header dump, e.g.
	// "x-api-key: sk-…" or "Authorization: Bearer …": the value up to the end
	// of the line (a raw CR/LF, an escaped \r or \n, or a closing quote).
	regexp.MustCompile(`(?i)((?:^|[^a-z0-9-]|\\[rn])(?:x-api-key|api-key|x-goog-api-key|authorization|proxy-authorization|cookie|set-cookie)\s*[:=]\s*)[^\r\n"\\]+`),
	// The same header as a JSON member: "x-api-key":"…".
	regexp.MustCompile(`(?i)("(?:x-api-key|api-key|x-goog-api-key|authorization|proxy-authorization|cookie|set-cookie)"\s*:\s*")[^"]*`),
	// Credential query parameters, e.g. ?key=… (Gemini) or &access_token=….
	regexp.MustCompile(`(?i)([?&;](?:key|api[_-]?key|access[_-]?token|token|auth|password|passwd|pass|secret|sig|signature)=)[^&#\s"\\]*`),
	// User info in a URL: scheme://user:password@host.
	regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://[^/\s:@"]*:)[^@/\s"]*@`),
	// A bearer or basic credential anywhere.
	regexp.MustCompile(`(?i)(\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]+`),
	// Well-known key shapes: Anthropic/OpenAI (sk-…) and Google (AIza…).
	regexp.MustCompile(`()\b(?:sk-[A-Za-z0-9_-]{16,}|AIza[0-9A-Za-z_-]{30,})`),
}

// RedactText masks credentials wherever a text quotes them: credential
// headers (x-api-key, Authorization, x-goog-api-key, api-key, Cookie …) in
// raw HTTP bytes, header dumps and JSON; credential query parameters (key,
// api_key, access_token, token, password, secret, sig …) in URLs and query
// strings; passwords in URL user info; "Bearer …"/"Basic …" values; and
// sk-… / AIza… key shapes. Everything else is kept. Every log line passes
// through it (package logging); a configured URL shown back to the user is
// redacted by redactURL, which knows its structure.
func RedactText(s string) string {
	for _, re := range credentialPatterns {
		if re.MatchString(s) {
			s = re.ReplaceAllString(s, "${1}"+Mask)
		}
	}
	return s
}

// MaskQuoted replaces the content of every Go double-quoted string literal
// in s (as fmt's %q writes it) with Mask, e.g.
//
//	invalid header value "sk-\x01" → invalid header value "***"
//
// Libraries (fasthttp, net/http, go-redis) quote the raw input they failed
// on this way, so an error text passed through MaskQuoted keeps its message
// and loses the request or response bytes. An unterminated quote masks the
// rest of s.
func MaskQuoted(s string) string {
	i := strings.IndexByte(s, '"')
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i >= 0 {
		b.WriteString(s[:i])
		q, err := strconv.QuotedPrefix(s[i:])
		if err != nil {
			b.WriteString(`"` + Mask)
			return b.String()
		}
		b.WriteString(`"` + Mask + `"`)
		s = s[i+len(q):]
		i = strings.IndexByte(s, '"')
	}
	b.WriteString(s)
	return b.String()
}
