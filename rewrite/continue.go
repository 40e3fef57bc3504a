package rewrite

// ContinueCodec is the part of a codec truncation recovery uses: when a
// reply stops on the output limit, the turn engine asks the model to
// continue it and hands the agent one reply whose truncated text block runs
// on into the continuation. Like TurnCodec, every method keeps bytes outside
// the edited spots identical, never modifies its inputs and is
// deterministic. A codec that does not implement it has no recovery.
type ContinueCodec interface {
	// ContinuationMessages returns the history item(s) that stand for a
	// truncated reply in the continuation request, as ReplyAsMessages does,
	// but without the reply's tool calls (a call cut by the limit is
	// discarded and the model makes it again): text, thinking and other
	// blocks stay byte for byte. With prefill the item is shaped so the
	// model continues it (it ends with the reply's last text, right-trimmed
	// of whitespace, which providers reject at the end of a prefill).
	// hasText reports whether any non-empty text remains; when it is false
	// the engine retries the turn instead of continuing it, and items may be
	// nil.
	ContinuationMessages(reply []byte, prefill bool) (items [][]byte, hasText bool, err error)

	// UserTextMessage returns a history item holding one user message with
	// text (the continue instruction).
	UserTextMessage(text string) ([]byte, error)

	// ContinueReply returns the agent's copy of a reply acc continued by
	// next (a complete reply of the continuation request): next's first
	// text block/part is appended to acc's last text block with the seam
	// de-duplicated (TrimSeam) when acc's last content is text (otherwise
	// it becomes a new block after acc's content); next's thinking and
	// reasoning blocks are dropped (the ledger keeps them for the model);
	// next's other blocks, tool calls included, follow in order. Usage is
	// summed as MergeReplies sums it and the stop reason (and Responses
	// status and incomplete_details) are next's; the id is acc's, except for
	// Responses where it is next's.
	ContinueReply(acc, next []byte) ([]byte, error)
}

// ContinueSplicer is the streaming counterpart of ContinueCodec, implemented
// by the splicers of APIs with recovery.
//
// Every splicer that implements it keeps the reply's last text block open at
// the end of each stream: the events that close that block (Anthropic
// content_block_stop; Responses output_text.done, content_part.done and the
// message's output_item.done) are held, and written first by Release, Next
// or Finish, so a continuation can still extend the block.
type ContinueSplicer interface {
	StreamSplicer
	// Continue starts a continuation stream spliced into the same reply,
	// like Next, except that the stream's text continues the reply's open
	// last text block (same block index/item; the continuation's own block
	// start events are dropped) with the seam de-duplicated through a
	// SeamFilter, its thinking/reasoning blocks are dropped, and any other
	// blocks follow renumbered. When the reply has no open text block the
	// continuation's text opens a new block. Held close events are rewritten
	// to carry the merged text where the API repeats it (Responses).
	Continue()
}

// Continuer returns c's ContinueCodec, if its API has one.
func Continuer(c Codec) (ContinueCodec, bool) {
	cc, ok := c.(ContinueCodec)
	return cc, ok
}
