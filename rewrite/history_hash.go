package rewrite

import (
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// HistoryKeyer is implemented by codecs whose conversation is one
// top-level member of the request body ("messages", "input", "contents"):
// the array whose elements a prompt cache sees as the conversation prefix.
type HistoryKeyer interface {
	HistoryKey() string
}

// MaxHistoryElems bounds the elements HashHistory hashes: a longer
// conversation is compared on its first MaxHistoryElems elements only.
const MaxHistoryElems = 4096

// History is the element hashes of one body's conversation array and where
// each element starts, for finding where two requests' conversations
// first differ.
type History struct {
	// Hashes holds, per element (at most MaxHistoryElems), the low 32 bits
	// of the xxhash64 of its bytes, "cache_control" members left out (see
	// HashElement).
	Hashes []uint32
	// Starts holds each hashed element's offset in the body.
	Starts []int
	// End is the offset of the array's closing bracket (where an element
	// the body lacks would have been); -1 when the body has no array.
	End int
}

// HashHistory hashes the elements of body's top-level array member key,
// reusing h's slices. A conversation that is not an array (a Responses
// string input) is hashed as one element; a body without the member, or
// not a JSON object, gives no elements and End -1. body must be valid JSON
// (a request the codec parsed, or a body built from one).
func HashHistory(h *History, body []byte, key string) {
	h.Hashes, h.Starts, h.End = h.Hashes[:0], h.Starts[:0], -1
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		return
	}
	arr := jsonkit.Member(root, key)
	switch {
	case !arr.Exists():
		return
	case !arr.IsArray():
		h.Hashes = append(h.Hashes, uint32(HashElement(arr.Raw)))
		h.Starts = append(h.Starts, arr.Index)
		h.End = arr.Index + len(arr.Raw)
		return
	}
	h.End = arr.Index + len(arr.Raw) - 1
	jsonkit.EachElement(arr, func(i int, v gjson.Result) bool {
		if i >= MaxHistoryElems {
			return false
		}
		h.Hashes = append(h.Hashes, uint32(HashElement(v.Raw)))
		h.Starts = append(h.Starts, v.Index)
		return true
	})
}

// cacheControlKey is the member HashElement leaves out.
const cacheControlKey = `"cache_control"`

// HashElement is the xxhash64 of one conversation element's bytes with
// every "cache_control" member (Anthropic's cache breakpoints, which agents
// move to the newest message each turn and which do not change the cached
// prefix) left out, together with the comma that separated it. Elements
// without one are hashed as they are, in one pass.
func HashElement(raw string) uint64 {
	i := strings.Index(raw, cacheControlKey)
	if i < 0 {
		return xxhash.Sum64String(raw)
	}
	d := xxhash.New()
	for i >= 0 {
		keyEnd := i + len(cacheControlKey)
		colon := jsonkit.SkipSpace(raw, keyEnd)
		if quoteEscaped(raw, i) || colon >= len(raw) || raw[colon] != ':' {
			// Inside a string, or a string value: not a member.
			_, _ = d.WriteString(raw[:keyEnd])
			raw = raw[keyEnd:]
			i = strings.Index(raw, cacheControlKey)
			continue
		}
		end := jsonkit.SkipValue(raw, jsonkit.SkipSpace(raw, colon+1))
		if end < 0 {
			break // malformed: hash the rest as it is
		}
		before := strings.TrimRight(raw[:i], " \t\r\n")
		after := raw[end:]
		if b, ok := strings.CutSuffix(before, ","); ok {
			before = b
		} else if a := strings.TrimLeft(after, " \t\r\n"); strings.HasPrefix(a, ",") {
			after = a[1:]
		}
		_, _ = d.WriteString(before)
		raw = after
		i = strings.Index(raw, cacheControlKey)
	}
	_, _ = d.WriteString(raw)
	return d.Sum64()
}

// quoteEscaped reports whether the quote at s[i] is escaped (preceded by an
// odd number of backslashes): it is then inside a string.
func quoteEscaped(s string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}
