package hooks

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
)

// Anchors returns one anchor per message: a hash chained over the message
// and every message before it, computed on the normalised view. An anchor
// identifies "this message, in this conversation, at this point": it stays
// the same when the agent re-serialises its JSON (key spacing, string
// escapes, cache_control markers moving between turns) and changes when the
// agent edits or compacts that message or anything before it. The ledger
// keys its entries by anchors, so an entry whose part of the history was
// edited simply no longer matches and is dropped. Blocks the view cannot see
// into (BlockOther: images, documents, unknown types) and empty text blocks
// take no part: SDKs drop or re-serialise them (genai turns an empty text
// part into {}), and the texts and calls around them identify the message.
func Anchors(msgs []Message) []string {
	out := make([]string, len(msgs))
	var prev [sha256.Size]byte
	h := sha256.New()
	var scratch []byte
	for i := range msgs {
		h.Reset()
		h.Write(prev[:])
		scratch = appendMessageDigest(scratch[:0], &msgs[i])
		h.Write(scratch)
		h.Sum(prev[:0])
		out[i] = hex.EncodeToString(prev[:16])
	}
	return out
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
		case BlockOther:
			continue
		case BlockText:
			text = append(text, b.Text...)
			continue
		}
		flush()
		dst = appendField(dst, []byte(b.Kind))
		dst = appendField(dst, []byte(b.Text))
		dst = appendField(dst, []byte(b.ToolCallID))
		dst = appendField(dst, []byte(b.ToolName))
		dst = appendField(dst, compactJSON(b.Args))
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

// compactJSON removes insignificant whitespace so re-serialised arguments
// hash the same; anything that is not valid JSON is hashed as it is.
func compactJSON(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return b
	}
	return buf.Bytes()
}
