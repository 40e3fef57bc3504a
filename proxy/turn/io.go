package turn

import (
	"errors"

	"github.com/valyala/fasthttp"
)

// ErrClientGone reports that the agent's client went away: the turn ends
// without a reply (the session still saves what the turn changed).
var ErrClientGone = errors.New("turn: client went away")

// Sender sends the requests of a turn after the agent's own upstream:
// follow-ups and continuations, with the agent's request line and headers,
// watched for the client leaving.
type Sender interface {
	// Send sends body upstream and returns the response with its body not
	// yet read; the receiver of the response releases it. An error wrapping
	// ErrClientGone means the client left while the upstream was waited on.
	// Send returns once body is written (or failed) and keeps no reference
	// to it: the turn recycles its bodies when Run is over.
	Send(body []byte) (*fasthttp.Response, error)
}

// Writer is how a turn's replies reach the agent: a JSON writer hands on
// the merged reply at the end; a stream writer forwards text as it arrives
// and releases tool calls once a reply is decided. The turn engine's reply
// loop is the same for both.
//
// An error from Read or Release ends the turn: the writer has already told
// the agent (the API's stream error event) or found it gone (an error
// wrapping ErrClientGone).
type Writer interface {
	// Read reads the reply in hand to its end and returns it complete.
	// A reply that is not the model's to decide on (an error status, a
	// stream the provider ended with its own error event) returns ok false:
	// it reaches the agent as it is and the turn ends.
	Read() (reply []byte, ok bool, err error)
	// Release hands the agent the decided reply without the tool calls
	// remove and with first moved to the front (a JSON writer has nothing
	// to do before Finish).
	Release(remove, first []int) error
	// Follow takes resp, the upstream's answer to a request the engine
	// sent within the turn, as the next reply to Read; cont says it
	// continues the last reply's text. It owns resp. An error means resp is
	// no reply to read (status, content type): the turn ends with the
	// replies so far.
	Follow(resp *fasthttp.Response, cont bool) error
	// Finish ends the agent's reply, after the session was saved.
	Finish(f Final)
	// KeepAlive keeps the agent's connection open while the turn waits
	// (a call held for approval) between Release and the next write: a
	// stream writer writes and flushes something every parser ignores (an
	// SSE comment line); a JSON writer writes nothing. An error wrapping
	// ErrClientGone means the agent went away: the turn stops waiting.
	KeepAlive() error
}

// Final is what a Writer's Finish gets.
type Final struct {
	// Reply is the agent's copy of the turn's reply (the first reply as it
	// came when nothing changed), or with Passed the reply Read returned
	// with ok false.
	Reply  []byte
	Passed bool
	// Session is the session the turn was saved under when the request
	// opened a conversation ("" otherwise, or when nothing was saved).
	Session string
	// Continuations counts the continuations truncation recovery made.
	Continuations int
}
