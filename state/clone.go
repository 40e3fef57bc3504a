package state

import (
	"maps"
	"slices"
)

// Clone returns a deep copy of s (nil for nil); see clone.
func (s *Session) Clone() *Session { return s.clone() }

// clone returns a deep copy of s that shares no memory it may change:
// every slice and map is copied, and every slot (Slot.CloneSlot), except
// the bytes of LedgerEntry.Data, which are read-only (an entry is replaced
// whole, never edited; the store clones a session up to three times per
// turn, and copying every entry's record each time was most of a clone).
// Nil slices stay nil. A Session field added later must be handled here;
// clone_test.go checks that nothing else is shared.
func (s *Session) clone() *Session {
	if s == nil {
		return nil
	}
	c := *s
	c.Ledger = slices.Clone(s.Ledger)
	c.Slots = s.Slots.clone()
	c.Routes = maps.Clone(s.Routes)
	c.staged = nil // staged for the save of s, not of its copy
	return &c
}
