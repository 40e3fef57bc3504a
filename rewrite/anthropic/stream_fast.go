package anthropic

import (
	"bytes"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
)

// The fast path of the Anthropic splicer's hottest event: a
// content_block_delta exactly as the API writes it,
//
//	{"type":"content_block_delta","index":N,"delta":{"type":"text_delta","text":"…"}}
//
// (or an input_json_delta, thinking_delta or signature_delta with its own
// content member). Such an event is most of a reply stream, and the general
// path (validate the payload, walk its members, walk the delta's) cost more
// than a microsecond per event. fastBlockDelta recognises the event byte for
// byte: every byte but the index digits and the string's content is fixed,
// so the payload is valid JSON exactly when those are (the string is checked
// with gjson's own rules), and it returns the very results
// readAnthropicEvent and readDelta give for it. Anything else, a space or a
// member more or in another order included, is left to the general path;
// the fast path never decides differently from it (TestFastBlockDelta,
// FuzzFastBlockDelta).

const (
	fdPrefix = `{"type":"content_block_delta","index":`
	fdDelta  = `,"delta":`
	fdType   = `{"type":"`
	fdSuffix = `}}`
)

// fdKinds are the delta types of the fast path, each written as
// `TYPE","FIELD":` after fdType.
var fdKinds = [...]struct{ typ, field, lit string }{
	{"text_delta", "text", `text_delta","text":`},
	{"input_json_delta", "partial_json", `input_json_delta","partial_json":`},
	{"thinking_delta", "thinking", `thinking_delta","thinking":`},
	{"signature_delta", "signature", `signature_delta","signature":`},
}

// anthropicFastDeltas turns the fast path on; tests turn it off to check
// that it changes nothing.
var anthropicFastDeltas = true

// maxFastIndexDigits bounds the index digits taken by the fast path (any
// index that long is left to the general path).
const maxFastIndexDigits = 9

// fastBlockDelta sets *f and *d to what readAnthropicEvent and readDelta
// give for data, and returns the block index (what blockIndex gives), when
// data is a content_block_delta of the exact form above; ok is false
// otherwise (the general path then decides, errors included), and f and d
// may have been written to.
func fastBlockDelta(data []byte, f *anthropicEventFields, d *asDelta) (up int64, ok bool) {
	if !bytes.HasPrefix(data, []byte(fdPrefix)) {
		return 0, false
	}
	// The index: a JSON integer without sign, fraction or exponent.
	is := len(fdPrefix)
	i := is
	num := 0
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		num = num*10 + int(data[i]-'0')
		i++
	}
	ie := i
	if n := ie - is; n == 0 || n > maxFastIndexDigits || (n > 1 && data[is] == '0') {
		return 0, false
	}
	if !bytes.HasPrefix(data[i:], []byte(fdDelta)) {
		return 0, false
	}
	i += len(fdDelta)
	ds := i // the delta object
	if !bytes.HasPrefix(data[i:], []byte(fdType)) {
		return 0, false
	}
	i += len(fdType)
	k := -1
	for j := range fdKinds {
		if bytes.HasPrefix(data[i:], []byte(fdKinds[j].lit)) {
			k = j
			break
		}
	}
	if k < 0 {
		return 0, false
	}
	i += len(fdKinds[k].lit)
	// The content: a string, checked as gjson's validstring checks it.
	if i >= len(data) || data[i] != '"' {
		return 0, false
	}
	qs := i
	esc := false
	for i++; ; i++ {
		if i >= len(data) {
			return 0, false
		}
		c := data[i]
		if c == '"' {
			break
		}
		if c < ' ' {
			return 0, false
		}
		if c != '\\' {
			continue
		}
		esc = true
		i++
		if i == len(data) {
			return 0, false
		}
		switch data[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			for range 4 {
				i++
				if i >= len(data) || !ishex(data[i]) {
					return 0, false
				}
			}
		default:
			return 0, false
		}
	}
	qe := i + 1 // past the closing quote
	if string(data[qe:]) != fdSuffix {
		return 0, false
	}

	s := jsonkit.UnsafeString(data)
	const ts = len(`{"type":`) // the type's string
	const te = len(`{"type":"content_block_delta"`)
	*f = anthropicEventFields{}
	*d = asDelta{}
	f.typ = gjson.Result{Type: gjson.String, Raw: s[ts:te], Str: s[ts+1 : te-1], Index: ts}
	// Num is left 0 as readAnthropicEvent leaves it (jsonkit.ValueAtRaw):
	// the index is read from its Raw.
	f.index = gjson.Result{Type: gjson.Number, Raw: s[is:ie], Index: is}
	f.delta = gjson.Result{Type: gjson.JSON, Raw: s[ds : len(s)-1], Index: ds}
	d.typ, d.field = fdKinds[k].typ, fdKinds[k].field
	d.val = gjson.Result{Type: gjson.String, Raw: s[qs:qe], Str: s[qs+1 : qe-1], Index: qs}
	if esc {
		// gjson unescapes the same way when it walks the object.
		d.val.Str = gjson.Parse(d.val.Raw).Str
	}
	return int64(num), true
}

func ishex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
