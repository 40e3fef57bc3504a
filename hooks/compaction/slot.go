package compaction

import (
	"slices"

	"github.com/shepherd-proxy/shepherd/state"
)

// SlotVersion is the schema version of State's JSON encoding.
//
// Version history:
//   - 1: {"epoch": n, "items": [{"anchor", "block", "call_id", "text",
//     "epoch"}]}.
const SlotVersion = 1

// Bounds of the slot: past either, the oldest items are dropped (their
// results go back to the model in full, and may be compacted again by a
// later epoch).
const (
	maxItems     = 256
	maxSlotBytes = 512 << 10
)

// State is compaction's per-session slot: the epochs so far and the
// compacted text of every result they compacted, replayed byte for byte on
// every later request.
type State struct {
	// Epoch is the number of the session's latest epoch (0: none yet).
	Epoch int `json:"epoch"`
	// Items are the compacted results, oldest epoch first.
	Items []Item `json:"items,omitempty"`
}

// Item is one compacted tool result.
type Item struct {
	// Anchor is the conv.Anchors anchor of the message holding the result
	// (as the agent sends it), Block the result's block index in it.
	Anchor string `json:"anchor"`
	Block  int    `json:"block"`
	// CallID is the result's call id (for display; the anchor decides).
	CallID string `json:"call_id,omitempty"`
	// Text is what the model sees instead of the result, byte for byte.
	Text string `json:"text"`
	// Epoch is the epoch that compacted it.
	Epoch int `json:"epoch"`
}

// SlotVersion implements state.Slot.
func (s *State) SlotVersion() int { return SlotVersion }

// CloneSlot implements state.Slot.
func (s *State) CloneSlot() state.Slot {
	return &State{Epoch: s.Epoch, Items: slices.Clone(s.Items)}
}

// Counts implements state.Counter: the session's epochs.
func (s *State) Counts() map[string]int64 {
	return map[string]int64{"compaction_epochs": int64(s.Epoch)}
}

// Of returns the compaction slot of sess: nil when it has none, an error
// when the stored slot cannot be read (an unknown version, bad JSON).
// Decoding a stored slot caches the result in sess (state.SlotAs).
func Of(sess *state.Session) (*State, error) {
	return state.SlotAs(sess, Name, decodeSlot)
}

var decodeSlot = state.SameShapeJSON[State]("compaction", 1, SlotVersion)

// itemKey identifies a result across requests.
type itemKey struct {
	anchor string
	block  int
}

// addEpoch returns the session effect of a new epoch: items are stored
// under the next epoch number (results the stored slot already holds keep
// their stored text: a concurrent request compacted them first), the items
// whose anchors are in stale are dropped (their messages are no longer in
// the conversation), and the slot is bounded. A slot this build cannot read
// is left as it is.
func addEpoch(items []Item, stale []string) func(*state.Session) {
	return func(sess *state.Session) {
		s, err := state.SlotForUpdate(sess, Name, decodeSlot)
		if err != nil {
			return
		}
		s.Epoch++
		if len(stale) > 0 {
			s.Items = slices.DeleteFunc(s.Items, func(it Item) bool { return slices.Contains(stale, it.Anchor) })
		}
		have := make(map[itemKey]bool, len(s.Items))
		for _, it := range s.Items {
			have[itemKey{it.Anchor, it.Block}] = true
		}
		for _, it := range items {
			if have[itemKey{it.Anchor, it.Block}] {
				continue
			}
			it.Epoch = s.Epoch
			s.Items = append(s.Items, it)
		}
		s.Items = bound(s.Items)
	}
}

// bound drops the oldest items until at most maxItems remain and their
// texts hold at most maxSlotBytes.
func bound(items []Item) []Item {
	size := 0
	for _, it := range items {
		size += len(it.Text) + len(it.Anchor) + len(it.CallID)
	}
	drop := 0
	for drop < len(items) && (len(items)-drop > maxItems || size > maxSlotBytes) {
		it := items[drop]
		size -= len(it.Text) + len(it.Anchor) + len(it.CallID)
		drop++
	}
	if drop == 0 {
		return items
	}
	return slices.Clone(items[drop:])
}
