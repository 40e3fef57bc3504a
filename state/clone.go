package state

import (
	"maps"
	"slices"
)

// Clone returns a deep copy of s (nil for nil); see clone.
func (s *Session) Clone() *Session { return s.clone() }

// clone returns a copy of s that shares no memory it may change: every
// slice and map is copied, except what is read-only or copied on write:
//   - the ledger's array (Session.Ledger: copied on write), clipped to its
//     length so that an append to the copy allocates (the original's
//     appends land past the copy's length), and so the bytes of
//     LedgerEntry.Data (an entry is replaced whole, never edited);
//   - the slots themselves (the Slots map is copied, its values shared):
//     a slot is changed only through SlotForUpdate, which first gives the
//     session its own copy (Slot.CloneSlot).
//
// The store clones a session up to three times per turn: deep copies of
// every ledger record and every slot (a long session's chapters, audit
// and turns) were most of a clone, and a turn changes few of them; a copy
// of the ledger (up to 512 entries of 80 bytes) was then most of what was
// left, three times per turn where the turn's own append copies it once. Nil
// slices stay nil. A Session field added later must be handled here;
// clone_test.go checks that nothing else is shared.
func (s *Session) clone() *Session {
	if s == nil {
		return nil
	}
	c := *s
	c.Ledger = slices.Clip(s.Ledger)
	c.Slots = maps.Clone(s.Slots)
	c.Routes = maps.Clone(s.Routes)
	c.staged = nil // staged for the save of s, not of its copy
	return &c
}
