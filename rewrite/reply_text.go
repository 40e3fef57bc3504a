package rewrite

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// TextParts joins the text parts of a reply into one string the reply
// owns. Add keeps each part's raw JSON literal; String decodes them
// (jsonkit.StringValue, which copies unescaped runs whole), copying each
// byte once: one part (the usual reply) is that part, owned; several are
// joined in order. A reply view that needs no text never calls String, and
// so never decodes it (ParseReplyCalls). The zero value is empty and ready.
//
// Add takes results with or without their string decoded
// (jsonkit.Members or MembersRaw): only Raw is read, and it must stay
// unchanged until String.
type TextParts struct {
	first string   // raw literal of the first part ("": none yet)
	rest  []string // raw literals of the others
}

// Add appends the string value of r (a gjson string result; anything else
// adds nothing).
func (t *TextParts) Add(r gjson.Result) {
	if r.Type != gjson.String {
		return
	}
	if t.first == "" { // a literal is never empty: it has its quotes
		t.first = r.Raw
	} else {
		t.rest = append(t.rest, r.Raw)
	}
}

// String returns the joined text, decoded, sharing no memory with the
// parts' raw literals.
func (t *TextParts) String() string {
	switch {
	case t.first == "":
		return ""
	case len(t.rest) == 0:
		return ownedValue(t.first)
	}
	var b strings.Builder
	n := len(t.first)
	for _, r := range t.rest {
		n += len(r)
	}
	b.Grow(n)
	b.WriteString(jsonkit.StringValue(t.first))
	for _, r := range t.rest {
		b.WriteString(jsonkit.StringValue(r))
	}
	return b.String()
}

// ownedValue is the decoded value of the string literal raw, in memory of
// its own (StringValue returns a substring of raw when it has no escapes).
func ownedValue(raw string) string {
	if strings.IndexByte(raw, '\\') >= 0 {
		return jsonkit.StringValue(raw) // decoded into a fresh string
	}
	return strings.Clone(jsonkit.StringValue(raw))
}
