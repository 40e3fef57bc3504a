package conv

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// Anchors returns one anchor per message: a hash chained over the message
// and every message before it, computed on the normalised view. An anchor
// identifies "this message, in this conversation, at this point": it stays
// the same when the agent re-serialises its JSON (key spacing, string
// escapes, cache_control markers moving between turns) and changes when the
// agent edits or compacts that message or anything before it. The ledger
// keys its entries by anchors, so an entry whose part of the history was
// edited simply no longer matches and is dropped.
//
// An anchor covers what the model and the user produced, never what a
// client adds, drops or moves when it sends the history back:
//   - tool call ids take no part, on calls and on results: gemini-cli gives
//     its own ids ("<name>_<epoch ms>_<n>") to functionCall parts the API
//     sent without one, and SDKs normalise ids they find invalid. Calls and
//     results are identified by their order, names, arguments and contents.
//   - thinking blocks take no part (their text and their signatures):
//     gemini-cli strips thought parts from its history and adds a synthetic
//     thoughtSignature to calls that lack one, other clients drop redacted
//     thinking or reasoning items. The signature bytes stay on the wire;
//     the ledger replays the model's own items, signatures where they were.
//   - blocks the view cannot see into (BlockOther: images, documents,
//     unknown types) and empty text blocks take no part: SDKs drop or
//     re-serialise them (genai turns an empty text part into {}; Chat
//     clients send content null, "" or leave it out).
//   - wire-only fields never reach the view: cache_control, signature,
//     thoughtSignature, Responses item id and status, Chat refusal null and
//     annotations [].
//   - arguments are compared canonically (canonicalJSON): key order,
//     whitespace, string escapes and number spelling do not matter.
func Anchors(msgs []Message) []string {
	out := make([]string, len(msgs))
	var c AnchorChain
	for i := range msgs {
		out[i] = c.Next(&msgs[i])
	}
	return out
}

// AnchorChain computes anchors one message at a time: Next of each message
// in order gives what Anchors gives. Its zero value starts a conversation;
// a copy taken after some messages (State) continues from there, so that
// a codec that remembers the chain after the messages an earlier request
// shared computes only the anchors of the new ones.
type AnchorChain struct {
	prev    [sha256.Size]byte
	scratch []byte
}

// Next returns the anchor of m, the message after those the chain has seen.
func (c *AnchorChain) Next(m *Message) string {
	d := m.Digest
	if len(d) != sha256.Size {
		c.scratch = appendMessageDigest(c.scratch[:0], m)
		sum := sha256.Sum256(c.scratch)
		d = sum[:]
	}
	var buf [2 * sha256.Size]byte
	copy(buf[:sha256.Size], c.prev[:])
	copy(buf[sha256.Size:], d)
	c.prev = sha256.Sum256(buf[:])
	return hex.EncodeToString(c.prev[:16])
}

// ChainState is the chain's value after the messages it has seen.
type ChainState [sha256.Size]byte

// State is the chain's value after the messages it has seen.
func (c *AnchorChain) State() ChainState { return c.prev }

// ResumeAnchors returns an AnchorChain that continues after the messages
// whose chain value was s.
func ResumeAnchors(s ChainState) AnchorChain { return AnchorChain{prev: s} }

// MessageDigest is the SHA-256 of the canonical encoding of m that Anchors
// chains: codecs that cache views compute it once per distinct message and
// hand it over in Message.Digest.
func MessageDigest(m *Message) []byte {
	sum := sha256.Sum256(appendMessageDigest(nil, m))
	return sum[:]
}

// appendMessageDigest appends a canonical, length-prefixed encoding of m.
// A run of adjacent text blocks is encoded as one text: a streamed reply may
// arrive as several text parts (Gemini) that an agent echoes back joined.
func appendMessageDigest(dst []byte, m *Message) []byte {
	dst = appendField(dst, []byte(m.Role))
	var text []byte
	flush := func() {
		if len(text) > 0 {
			dst = appendField(dst, []byte(BlockText))
			dst = appendField(dst, text)
			text = text[:0]
		}
	}
	for i := range m.Blocks {
		b := &m.Blocks[i]
		switch b.Kind {
		case BlockOther, BlockThinking:
			continue
		case BlockText:
			text = append(text, b.Text...)
			continue
		}
		flush()
		dst = appendField(dst, []byte(b.Kind))
		dst = appendField(dst, []byte(b.Text))
		dst = appendField(dst, []byte(b.ToolName))
		dst = appendField(dst, canonicalJSON(b.Args))
		if b.IsError {
			dst = append(dst, 1)
		} else {
			dst = append(dst, 0)
		}
	}
	flush()
	return dst
}

func appendField(dst, f []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(f)))
	return append(dst, f...)
}

// canonicalJSON returns a canonical digest of JSON arguments, so that
// arguments an agent re-serialised hash the same: object keys sorted,
// strings by their decoded value (escapes do not matter), numbers by their
// float64 value, whitespace ignored. The genai SDK, for one, keeps arguments
// in a map and sends them back with sorted keys and re-formatted numbers.
// Anything that is not valid JSON is hashed as it is.
func canonicalJSON(b []byte) []byte {
	if len(b) == 0 || !gjson.ValidBytes(b) {
		return b
	}
	return appendCanonical(make([]byte, 0, len(b)), gjson.ParseBytes(b))
}

func appendCanonical(dst []byte, r gjson.Result) []byte {
	switch r.Type {
	case gjson.Null:
		return append(dst, 'n')
	case gjson.True:
		return append(dst, 't')
	case gjson.False:
		return append(dst, 'f')
	case gjson.Number:
		dst = append(dst, 'd')
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(r.Num))
	case gjson.String:
		dst = append(dst, 's')
		return appendField(dst, []byte(r.Str))
	}
	if r.IsArray() {
		dst = append(dst, 'a')
		r.ForEach(func(_, v gjson.Result) bool {
			dst = appendCanonical(dst, v)
			return true
		})
		return append(dst, ']')
	}
	type member struct {
		key string
		val gjson.Result
	}
	var members []member
	r.ForEach(func(k, v gjson.Result) bool {
		members = append(members, member{k.Str, v})
		return true
	})
	slices.SortStableFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	dst = append(dst, 'o')
	for _, m := range members {
		dst = appendField(dst, []byte(m.key))
		dst = appendCanonical(dst, m.val)
	}
	return append(dst, '}')
}
