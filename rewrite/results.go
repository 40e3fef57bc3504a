package rewrite

import "github.com/shepherd-proxy/shepherd/rewrite/conv"

// ResultReplacer is the part of an API's TurnCodec that rewrites tool
// results the agent sent (conv.RequestEdits.ReplaceResults: evidence
// compaction). The turn engine applies it to the agent's body before the
// ledger replay; a codec without it leaves the request as it is (the
// edits are dropped and counted, fail-open).
type ResultReplacer interface {
	// ReplaceToolResults returns body with the content of each edit's
	// tool-result block replaced by the edit's Text, written as text
	// (conv.ResultEdit says the shape per API). Edits name distinct
	// (Msg, Block) positions of body's view, in any order. Everything
	// else, the call id and the error flag included, keeps its bytes. An
	// edit whose position is not a tool-result block is an error and body
	// is not changed.
	ReplaceToolResults(body []byte, edits []conv.ResultEdit) ([]byte, error)
}
