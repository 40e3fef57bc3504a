package state

import (
	"maps"
	"slices"
)

// Clone returns a deep copy of s (nil for nil); see clone.
func (s *Session) Clone() *Session { return s.clone() }

// clone returns a deep copy of s that shares no memory with it: every slice,
// including LedgerEntry.Data and every slot (Slot.CloneSlot), is copied. Nil slices stay
// nil. A Session field added later must be handled here; clone_test.go
// checks that nothing is shared.
func (s *Session) clone() *Session {
	if s == nil {
		return nil
	}
	c := *s
	if s.Ledger != nil {
		c.Ledger = make([]LedgerEntry, len(s.Ledger))
		for i, e := range s.Ledger {
			e.Data = slices.Clone(e.Data)
			c.Ledger[i] = e
		}
	}
	c.Slots = s.Slots.clone()
	c.Routes = maps.Clone(s.Routes)
	c.staged = nil // staged for the save of s, not of its copy
	return &c
}
