package mock

import (
	"strconv"
	"strings"
	"time"
)

// Time stamps in stream text (Options.StampText): each stamped delta's text
// is reserved as a placeholder when the stream is rendered, and the digits
// are written into it when the event is handed to the connection.

// StampDigits is the length of a stamp: the Unix time in nanoseconds, zero
// padded (19 digits until the year 2286).
const StampDigits = 19

// stampSlot is where a stamp goes: the placeholder at buffer offset off, in
// the event with index event.
type stampSlot struct{ event, off int }

// stampText is the placeholder text of a stamped delta: StampDigits zeros,
// then spaces up to chunk characters.
func stampText(chunk int) string {
	return strings.Repeat("0", StampDigits) + strings.Repeat(" ", max(0, chunk-StampDigits))
}

// stampAt records a placeholder at offset off of the event being written.
func (e *events) stampAt(off int) {
	e.stamps = append(e.stamps, stampSlot{event: len(e.ends), off: off})
}

// putStamp writes ns as StampDigits decimal digits, zero padded, into b.
func putStamp(b []byte, ns int64) {
	for i := StampDigits - 1; i >= 0; i-- {
		b[i] = byte('0' + ns%10)
		ns /= 10
	}
}

// ParseStamp reads the stamp at the start of a stamped delta's text: the
// send time, and whether the text starts with StampDigits digits.
func ParseStamp(text string) (time.Time, bool) {
	if len(text) < StampDigits {
		return time.Time{}, false
	}
	var ns int64
	for i := range StampDigits {
		c := text[i]
		if c < '0' || c > '9' {
			return time.Time{}, false
		}
		ns = ns*10 + int64(c-'0')
	}
	if len(text) > StampDigits && text[StampDigits] >= '0' && text[StampDigits] <= '9' {
		return time.Time{}, false // more digits: not a stamp
	}
	return time.Unix(0, ns), true
}

// NumberedToolCalls returns n function calls, tool_0 … tool_{n-1}, with
// small path and line arguments: the calls cmd/mockprovider's -tools flag
// scripts.
func NumberedToolCalls(n int) []ToolCall {
	out := make([]ToolCall, n)
	for i := range out {
		out[i] = ToolCall{Name: "tool_" + strconv.Itoa(i),
			Args: `{"path":"src/file_` + strconv.Itoa(i) + `.go","line":` + strconv.Itoa(i+1) + `}`}
	}
	return out
}
