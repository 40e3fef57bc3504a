package state

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalidEventID is returned (wrapped) by SessionEvents and AllEvents
// for an after that is neither "" nor an id of the form "<ms>-<seq>" (a
// client's Last-Event-ID is untrusted input).
var ErrInvalidEventID = errors.New("state: invalid event id")

// Event log defaults (MemoryOptions and RedisOptions).
const (
	// DefaultEventsPerSession is how many records a session's log keeps.
	DefaultEventsPerSession = 500
	// DefaultEventsGlobal is how many records the global log keeps.
	DefaultEventsGlobal = 5000
	// defaultEventLimit is the read limit used for limit <= 0.
	defaultEventLimit = 100
)

// eventID is a parsed event id: unix milliseconds and a sequence number
// within that millisecond (the form of Redis stream ids).
type eventID struct {
	ms, seq uint64
}

// parseEventID reads "<ms>-<seq>"; ok is false for anything else.
func parseEventID(s string) (id eventID, ok bool) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		return eventID{}, false
	}
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil {
		return eventID{}, false
	}
	return eventID{ms: ms, seq: seq}, true
}

func (id eventID) String() string {
	return strconv.FormatUint(id.ms, 10) + "-" + strconv.FormatUint(id.seq, 10)
}

func (id eventID) compare(o eventID) int {
	if c := cmp.Compare(id.ms, o.ms); c != 0 {
		return c
	}
	return cmp.Compare(id.seq, o.seq)
}

// next returns the id that follows id at unix millisecond ms: ms with
// sequence 0 when ms is later than id, otherwise id's millisecond with the
// next sequence (so ids keep increasing when the clock stands still or
// goes backwards).
func (id eventID) next(ms uint64) eventID {
	if ms > id.ms {
		return eventID{ms: ms}
	}
	return eventID{ms: id.ms, seq: id.seq + 1}
}

// CompareEventIDs orders two ids of one event log: -1 when a is older than
// b, 0 when equal, +1 when newer. Ids compare by their millisecond, then by
// their sequence ("9-0" < "10-0"), not as strings. "" and malformed ids are
// older than every well-formed one; two of them compare as strings.
func CompareEventIDs(a, b string) int {
	ia, okA := parseEventID(a)
	ib, okB := parseEventID(b)
	switch {
	case okA && okB:
		return ia.compare(ib)
	case okA:
		return 1
	case okB:
		return -1
	default:
		return strings.Compare(a, b)
	}
}

// checkAfter validates a read cursor: "" or a well-formed id.
func checkAfter(after string) error {
	if after == "" {
		return nil
	}
	if _, ok := parseEventID(after); !ok {
		return fmt.Errorf("%w: %q", ErrInvalidEventID, truncateForError(after))
	}
	return nil
}

// eventLimit applies the read default.
func eventLimit(limit int) int {
	if limit <= 0 {
		return defaultEventLimit
	}
	return limit
}

// truncateForError cuts untrusted input quoted in an error message.
func truncateForError(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
