package rewrite

// StreamSplicer rewrites the reply stream(s) of one turn into the single
// stream the agent receives. It is the streaming counterpart of EditReply
// and MergeReplies: text and thinking reach the agent as they arrive,
// tool-call blocks are held until the turn engine has decided on them, a
// follow-up stream is appended to the same reply with its preamble dropped
// and its indices continued, and the terminal events come once at the end
// with the last stream's stop reason and usage summed over all streams.
//
// Protocol, per turn:
//
//	for each upstream stream (the first, then every follow-up):
//	    Feed(ev) for each of its events, writing what it returns at once
//	    Done() reports whether its terminal event arrived; Reply() returns
//	    the complete reply JSON of that stream (for the turn engine)
//	    Release(remove, first) writes the held tool calls the agent gets
//	    if the engine follows up: Next(), then feed the follow-up stream
//	Finish() writes the terminal events
//
// Every []byte returned is a sequence of complete SSE events framed like
// the upstream's (LF or CRLF) and may be empty. What Feed returns may alias
// the event it was given (Reader slices are valid until the next Next):
// write or copy it before reading on. A splicer is per turn and not
// safe for concurrent use. Implementations never panic on odd input: an
// event they cannot parse is an error.
type StreamSplicer interface {
	// Feed takes one event of the current upstream stream and returns the
	// bytes to send to the agent now. Events before the first content block
	// pass through on the first stream and are dropped on follow-ups; pings
	// and unknown events pass through; the terminal events (Anthropic
	// message_delta and message_stop, Chat finish/usage chunks and [DONE],
	// Responses response.completed/incomplete/failed, Gemini's finishReason
	// and usage) are held. Block indices are renumbered so the agent sees
	// 0, 1, 2, … across all streams of the turn. ev is read during the
	// call only. It is a pointer because Feed runs on the stack of a
	// streamed turn's goroutine, under its whole reading chain: an Event
	// passed by value is copied into the caller's and the callee's frames.
	Feed(ev *Event) ([]byte, error)

	// Done reports whether the current stream's terminal event arrived.
	Done() bool

	// Reply returns the current stream's reply as the JSON body the API
	// would have sent without streaming (for ParseReply, ReplyAsMessages,
	// EditReply). Valid once Done.
	Reply() ([]byte, error)

	// Release returns the held tool calls of the current stream that the
	// agent gets: those at reply-view indices not in remove, with the ones in
	// first moved ahead (EditReply's semantics), renumbered.
	Release(remove, first []int) ([]byte, error)

	// Next starts a follow-up stream spliced into the same reply.
	Next()

	// Finish returns the terminal events, once: the last stream's stop
	// reason (the API's "finished" value when the engine removed every tool
	// call of the last stream), usage summed over all streams as
	// MergeReplies sums it, and for Responses the merged response object
	// with the last stream's id.
	Finish() ([]byte, error)

	// Events returns the number of events the splicer emitted so far
	// (metrics, Responses sequence numbers).
	Events() int
}
