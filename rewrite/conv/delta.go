package conv

// ToolCallDelta is a piece of a tool call while a reply streams, for
// features that watch calls before they are complete (an edit announced as
// soon as its path is known). A JSON reply gives each call as one delta
// with Done set.
//
// For every call the deltas come in order: the first carries ID and Name
// (and may carry a first Fragment); Fragments concatenated are exactly
// the call's Args as ToolCall reports them (for a free-form call, the raw
// input text, not the {"input":…} object); the last has Done set, after
// which no delta of that call follows. Deltas of different calls may
// interleave where the wire interleaves them.
type ToolCallDelta struct {
	// Stream counts the upstream streams of the turn (0 for the agent's own
	// request, then one per follow-up or continuation); Index is the
	// call's position among that stream's tool calls (ToolCall.Index of
	// its reply). Together they identify the call within the turn.
	Stream int
	Index  int
	ID     string
	Name   string
	// Fragment is the next piece of the arguments (decoded: JSON text, or
	// for a free-form call raw input text).
	Fragment string
	Freeform bool
	// Done marks the call complete.
	Done bool
}

// CallObserver receives ToolCallDelta values as a reply arrives. It is
// called on the reply's goroutine, between reading upstream events, so it
// must be quick and must not block; it must not retain the delta's
// strings beyond the call unless it copies them (they may alias a reused
// buffer).
type CallObserver func(ToolCallDelta)
