package turn

import (
	"fmt"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// reshape applies the edits that change the agent's own messages to its
// body: the tool-result replacements (last one per block wins), then
// DropBefore. It returns the body, the view messages that remain and their
// anchors (a new slice: anchors is only read; the ledger replay and the
// fresh user text then address the remaining messages by position).
// Without such edits it returns the agent's body, view and anchors
// unchanged.
func (t *Turn) reshape(edits conv.RequestEdits, anchors []string) ([]byte, []conv.Message, []string, error) {
	body, msgs := t.body, t.view.Messages
	if len(edits.ReplaceResults) > 0 {
		rr, ok := t.tc.(rewrite.ResultReplacer)
		if !ok {
			return nil, nil, nil, fmt.Errorf("turn: this API cannot replace tool results")
		}
		var err error
		if body, err = rr.ReplaceToolResults(body, lastPerBlock(edits.ReplaceResults)); err != nil {
			return nil, nil, nil, fmt.Errorf("turn: replacing tool results: %w", err)
		}
	}
	drop := min(edits.DropBefore, max(lastUserTurn(msgs), 0))
	if drop <= 0 {
		return body, msgs, anchors, nil
	}
	body, err := leaveOut(t.tc, body, msgs, drop)
	if err != nil {
		return nil, nil, nil, err
	}
	kept := make([]conv.Message, 0, len(msgs)-drop)
	keptAnchors := make([]string, 0, len(msgs)-drop)
	for i := range msgs {
		if i >= drop || msgs[i].Role == conv.RoleSystem {
			kept = append(kept, msgs[i])
			keptAnchors = append(keptAnchors, anchors[i])
		}
	}
	return body, kept, keptAnchors, nil
}

// leaveOut returns body without the messages before drop that are not
// system messages: in one pass when the codec locates its messages
// (rewrite.MessageLocator), else one ReplaceMessages per message.
func leaveOut(tc rewrite.TurnCodec, body []byte, msgs []conv.Message, drop int) ([]byte, error) {
	keep := func(i int) bool { return i >= drop || msgs[i].Role == conv.RoleSystem }
	if loc, ok := tc.(rewrite.MessageLocator); ok {
		if out, err := rewrite.KeepMessages(body, loc, len(msgs), keep); err == nil {
			return out, nil
		}
	}
	// From the front, each message at its position in the body as it is
	// then (the messages before it that were left out no longer count):
	// what precedes a removal is only kept system messages, so no removal
	// joins two neighbours into one view message (Responses merges
	// consecutive assistant items; going from the end, leaving out a user
	// message between two assistant ones would merge a dropped one with a
	// kept one, and the next removal would take both).
	removed := 0
	for i := range drop {
		if keep(i) {
			continue
		}
		var err error
		if body, err = tc.ReplaceMessages(body, i-removed, nil); err != nil {
			return nil, fmt.Errorf("turn: leaving out message %d: %w", i, err)
		}
		removed++
	}
	return body, nil
}

// lastPerBlock keeps, of several edits of one result block, the last.
func lastPerBlock(edits []conv.ResultEdit) []conv.ResultEdit {
	type pos struct{ msg, block int }
	seen := make(map[pos]int, len(edits))
	out := make([]conv.ResultEdit, 0, len(edits))
	for _, e := range edits {
		p := pos{e.Msg, e.Block}
		if i, ok := seen[p]; ok {
			out[i] = e
			continue
		}
		seen[p] = len(out)
		out = append(out, e)
	}
	return out
}
