package rewrite

import (
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// TurnCodec is the part of a codec the turn engine and the session ledger
// use to rebuild the model's view of a conversation: shepherd answers some
// tool calls itself, continues the turn upstream, and on every later request
// puts back what it removed from the agent's copy. All positions are indices
// into conv.Request.Messages of the body given (the codec maps them to its
// wire array, e.g. Responses items merged into one assistant message).
//
// Every method leaves bytes outside the edited spots identical, never
// modifies its input slices, and is deterministic: the same input gives the
// same bytes, so a replayed edit reproduces exactly what the model saw.
type TurnCodec interface {
	// ReplyAsMessages converts a complete non-streaming reply body into the
	// raw JSON of the conversation item(s) that represent it in a request:
	// Anthropic one assistant message ({"role":"assistant","content":[…]}
	// with the reply's content blocks byte for byte, thinking signatures
	// included); Chat one assistant message (content, tool_calls); Responses
	// the reply's output items as input items; Gemini one content with role
	// "model" and the candidate's parts byte for byte (thoughtSignature
	// kept).
	ReplyAsMessages(reply []byte) ([][]byte, error)

	// ToolResultMessages renders shepherd's results as the raw item(s) that
	// follow the assistant turn: Anthropic one user message of tool_result
	// blocks (is_error set for refusals); Chat one tool message per result;
	// Responses one function_call_output item per result (a
	// custom_tool_call_output for a Freeform result); Gemini one user
	// content of functionResponse parts ({"name","response":{"content"|"error"}},
	// "id" when CallID is set).
	ToolResultMessages(results []conv.ToolResult) ([][]byte, error)

	// AppendMessages appends items at the end of the conversation.
	AppendMessages(body []byte, items [][]byte) ([]byte, error)

	// ReplaceMessages replaces the message at index pos with items (zero or
	// more raw items).
	ReplaceMessages(body []byte, pos int, items [][]byte) ([]byte, error)

	// PrependToolResults puts results first among the tool results that
	// answer the assistant message at index pos: Anthropic prepends
	// tool_result blocks to the user message after pos (inserting a user
	// message if there is none); Chat and Responses insert the result items
	// right after pos; Gemini prepends functionResponse parts to the content
	// after pos (inserting one if there is none).
	PrependToolResults(body []byte, pos int, results []conv.ToolResult) ([]byte, error)

	// AppendUserTextAt appends texts to the user turn at index pos exactly as
	// ApplyEdits' AppendUserText does for the newest one (for Chat, pos may
	// be a tool message: the text then goes in a new user message after the
	// tool messages that follow pos).
	AppendUserTextAt(body []byte, pos int, texts []string) ([]byte, error)

	// AppendUserTexts gives the bytes AppendUserTextAt gives when applied
	// for each op in descending position order (positions distinct, all of
	// body's view), in one walk and one copy of body.
	AppendUserTexts(body []byte, ops []UserTexts) ([]byte, error)

	// EditReply returns the agent's copy of a non-streaming reply: the tool
	// calls at the reply-view indices in remove (conv.ToolCall.Index) are
	// dropped, and those in first are moved, in that order, before the other
	// tool calls (ahead of the first tool call, after any text or thinking
	// that precedes it). When every tool call is removed the stop reason
	// becomes the API's "finished" value (end_turn, stop, completed, STOP).
	EditReply(reply []byte, remove, first []int) ([]byte, error)

	// MergeReplies returns one reply for the agent made of first followed by
	// next: next's content blocks/items/parts appended after first's, usage
	// summed, and the stop reason taken from next. The id is first's, except
	// for Responses, where it is next's (the agent must continue the chain
	// from the last response upstream).
	MergeReplies(first, next []byte) ([]byte, error)
}
