package rewrite

import (
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// TextParts joins the text parts of a reply into one string the reply
// owns, copying each byte once: one part (the usual reply) is that part,
// owned (jsonkit.OwnedString); several are joined in order. The zero value
// is empty and ready.
//
// Codecs read the parts with jsonkit.Member/Members, whose strings are
// decoded by jsonkit.StringValue, rather than gjson's Get, which decodes
// an escaped string byte by byte.
type TextParts struct {
	first  string
	joined []byte
	n      int
}

// Add appends the string value of r (a gjson string result; anything else
// adds nothing).
func (t *TextParts) Add(r gjson.Result) {
	if r.Type != gjson.String {
		return
	}
	switch t.n {
	case 0:
		t.first = jsonkit.OwnedString(r)
	case 1:
		t.joined = append(append(make([]byte, 0, len(t.first)+len(r.Str)), t.first...), r.Str...)
	default:
		t.joined = append(t.joined, r.Str...)
	}
	t.n++
}

// String returns the joined text.
func (t *TextParts) String() string {
	if t.n > 1 {
		return string(t.joined)
	}
	return t.first
}
