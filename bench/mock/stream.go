package mock

import (
	"errors"
	"io"
	"time"
)

var errCut = errors.New("mock: connection cut by script")

// eventStream is the body reader of a streamed reply. fasthttp calls Read
// from the connection's goroutine and writes whatever it returns as one HTTP
// chunk, flushed at once; Read hands out at most one event per call, so each
// event is flushed on its own. Timing (TTFT, inter-event delay, hold, gate)
// happens inside Read. A non-EOF error makes fasthttp close the connection
// without the terminating chunk.
type eventStream struct {
	s    *Server
	buf  []byte
	ends []int
	next int    // index of the next event to send
	rest []byte // unsent bytes of the current event (a Read may take less)
	cut  bool

	stamps    []stampSlot // Options.StampText placeholders, in event order
	nextStamp int

	ttft, delay     time.Duration
	hold, pingEvery time.Duration
	holdAfter       int    // events sent before the hold (at least 1)
	ping            []byte // keep-alive sent while holding; nil sends nothing
	gate            <-chan struct{}
	holdUntil       time.Time
	holding         bool
}

func (e *eventStream) Read(p []byte) (int, error) {
	if len(e.rest) > 0 {
		n := copy(p, e.rest)
		e.rest = e.rest[n:]
		return n, nil
	}
	if e.holding {
		if left := time.Until(e.holdUntil); left > 0 {
			if e.ping != nil && e.pingEvery > 0 {
				wait := min(e.pingEvery, left)
				if !e.s.sleep(wait) {
					return 0, errClosed
				}
				if wait < left || time.Until(e.holdUntil) > 0 {
					e.rest = e.ping
					return e.Read(p)
				}
			} else if !e.s.sleep(left) {
				return 0, errClosed
			}
		}
		e.holding = false
	}
	if e.next >= len(e.ends) {
		if e.cut {
			return 0, errCut
		}
		return 0, io.EOF
	}
	if e.next == 0 {
		if !e.s.sleep(e.ttft) {
			return 0, errClosed
		}
	} else {
		if e.gate != nil {
			select {
			case <-e.gate:
			case <-e.s.done:
				return 0, errClosed
			}
		}
		if !e.s.sleep(e.delay) {
			return 0, errClosed
		}
	}
	start := 0
	if e.next > 0 {
		start = e.ends[e.next-1]
	}
	// Stamp the event's text deltas now, as it is handed to the connection
	// (fasthttp writes and flushes it as soon as Read returns).
	for e.nextStamp < len(e.stamps) && e.stamps[e.nextStamp].event == e.next {
		putStamp(e.buf[e.stamps[e.nextStamp].off:], time.Now().UnixNano())
		e.nextStamp++
	}
	e.rest = e.buf[start:e.ends[e.next]]
	e.next++
	if e.next == e.holdAfter && e.hold > 0 {
		e.holding = true
		e.holdUntil = time.Now().Add(e.hold)
	}
	return e.Read(p)
}

// Close releases the rendered stream; fasthttp calls it when the body is done.
func (e *eventStream) Close() error {
	e.buf, e.ends, e.rest, e.stamps = nil, nil, nil, nil
	return nil
}
