package state

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// Slot is the part of a session record that one hook owns: its own state
// (topics' chapters, intents' selection and audit, …), stored under the
// hook's name. The store treats it as opaque, and encodes it as
// {"v": SlotVersion(), "data": <the slot as JSON>} where the store
// serialises sessions (Redis).
//
// A slot is copied on write: copies of a session (the store's own among
// them) share their slots, so a slot read from a session (SlotAs) must not
// be changed in place. An effect changes a slot through SlotForUpdate,
// which puts a copy of its own in the session first.
type Slot interface {
	// SlotVersion is the schema version of the slot's JSON encoding. A hook
	// raises it when it changes the encoding, and keeps decoding the older
	// versions (or refuses them with an error).
	SlotVersion() int
	// CloneSlot returns a deep copy that shares no memory with the receiver.
	CloneSlot() Slot
}

// RawSlot is a slot as read from a serialised record: its version and its
// JSON, not yet decoded. Decoding belongs to the hook that owns the slot (see
// SlotAs); a slot nobody decodes (its hook is off) is written back unchanged,
// so turning a hook off and on again loses nothing.
type RawSlot struct {
	V    int             `json:"v"`
	Data json.RawMessage `json:"data,omitempty"`
	// Note is the slot's Noter note when it was written, kept so that a
	// session listing shows it without decoding the slot.
	Noted string `json:"note,omitempty"`
	// Counted is the slot's Counter counts when it was written, kept for
	// the same reason.
	Counted map[string]int64 `json:"counts,omitempty"`
}

// Noter is implemented by a slot with a short note worth showing in session
// listings (Summary.Notes): topics' active topic, intents' active intent.
type Noter interface {
	Note() string
}

// Counter is implemented by a slot with counters worth showing in session
// listings (Summary.Counts): topics' "chapters", intents' "refusals".
// Names must not collide across slots.
type Counter interface {
	Counts() map[string]int64
}

// Note implements Noter.
func (r *RawSlot) Note() string { return r.Noted }

// Counts implements Counter: the counts kept when the slot was written (nil
// when it had none).
func (r *RawSlot) Counts() map[string]int64 { return r.Counted }

// SlotVersion implements Slot.
func (r *RawSlot) SlotVersion() int { return r.V }

// CloneSlot implements Slot.
func (r *RawSlot) CloneSlot() Slot {
	return &RawSlot{V: r.V, Data: slices.Clone(r.Data), Noted: r.Noted, Counted: maps.Clone(r.Counted)}
}

// Slots maps a hook's name to its slot.
type Slots map[string]Slot

// MarshalJSON encodes every slot as {"v":…,"data":…}.
func (s Slots) MarshalJSON() ([]byte, error) {
	out := make(map[string]RawSlot, len(s))
	for name, sl := range s {
		if sl == nil {
			continue
		}
		r, err := rawSlotOf(name, sl)
		if err != nil {
			return nil, err
		}
		out[name] = *r
	}
	return json.Marshal(out)
}

// SlotAppender is implemented by a slot that writes its own JSON (what
// encoding/json writes for it), which a serialising store then uses
// instead of encoding/json's reflection.
type SlotAppender interface {
	AppendSlotJSON(dst []byte) ([]byte, error)
}

// rawSlotOf returns sl as stored: sl itself when it is a *RawSlot, else
// its JSON (its own, SlotAppender, or encoding/json's) with its version,
// note and counts.
func rawSlotOf(name string, sl Slot) (*RawSlot, error) {
	if r, ok := sl.(*RawSlot); ok {
		return r, nil
	}
	var data []byte
	var err error
	if a, ok := sl.(SlotAppender); ok {
		data, err = a.AppendSlotJSON(nil)
	} else {
		data, err = json.Marshal(sl)
	}
	if err != nil {
		return nil, fmt.Errorf("state: encoding slot %q: %w", name, err)
	}
	r := &RawSlot{V: sl.SlotVersion(), Data: data}
	if n, ok := sl.(Noter); ok {
		r.Noted = n.Note()
	}
	if c, ok := sl.(Counter); ok {
		r.Counted = c.Counts()
	}
	return r, nil
}

// UnmarshalJSON reads every slot as a *RawSlot, for its hook to decode.
func (s *Slots) UnmarshalJSON(b []byte) error {
	var raw map[string]*RawSlot
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if len(raw) == 0 {
		*s = nil
		return nil
	}
	out := make(Slots, len(raw))
	for name, r := range raw {
		if r != nil {
			out[name] = r
		}
	}
	*s = out
	return nil
}

// slotFacts are the notes and counts of a session's slots, for its
// summary: the slots that have a note (Noter) and the counts of those that
// have some (Counter), each nil when none does.
type slotFacts struct {
	notes  map[string]string
	counts map[string]int64
}

// facts gathers the slots' notes and counts. Count names are unique across
// slots (see Counter); should two collide, the slot whose name sorts last
// wins, so the result does not depend on map order.
func (s Slots) facts() slotFacts {
	var f slotFacts
	for _, name := range slices.Sorted(maps.Keys(s)) {
		var note string
		if n, ok := s[name].(Noter); ok {
			note = n.Note()
		}
		var counts map[string]int64
		if c, ok := s[name].(Counter); ok {
			counts = c.Counts()
		}
		f.add(name, note, counts)
	}
	return f
}

// add records slot name's note and counts. Slots must come in name order
// (appendSlots and facts go so), for the rule on colliding count names.
// A nil f records nothing.
func (f *slotFacts) add(name, note string, counts map[string]int64) {
	if f == nil {
		return
	}
	if note != "" {
		if f.notes == nil {
			f.notes = map[string]string{}
		}
		f.notes[name] = note
	}
	for k, v := range counts {
		if f.counts == nil {
			f.counts = map[string]int64{}
		}
		f.counts[k] = v
	}
}

// Note is the note of the slot called name ("" when s or the slot is nil or
// the slot has none): another hook's short public summary of its state.
func (s *Session) Note(name string) string {
	if s == nil {
		return ""
	}
	if n, ok := s.Slots[name].(Noter); ok {
		return n.Note()
	}
	return ""
}

// SetSlot stores v as the slot called name (nil removes it).
func (s *Session) SetSlot(name string, v Slot) {
	if v == nil {
		delete(s.Slots, name)
		return
	}
	if s.Slots == nil {
		s.Slots = Slots{}
	}
	s.Slots[name] = v
}

// SlotAs returns the slot called name as a *T, decoding a RawSlot with
// decode (which receives the stored version and JSON) and caching the
// result in s. It returns (nil, nil) when s has no such slot; decode's error
// when the stored form cannot be read (an unknown version, bad JSON): the
// hook then decides whether to start afresh or refuse. A slot of another Go
// type under name is an error.
func SlotAs[T any, PT interface {
	*T
	Slot
}](s *Session, name string, decode func(version int, data []byte) (PT, error)) (PT, error) {
	if s == nil || s.Slots == nil {
		return nil, nil
	}
	switch v := s.Slots[name].(type) {
	case nil:
		return nil, nil
	case PT:
		return v, nil
	case *RawSlot:
		d, err := decode(v.V, v.Data)
		if err != nil {
			return nil, fmt.Errorf("state: slot %q (version %d): %w", name, v.V, err)
		}
		s.Slots[name] = d
		return d, nil
	default:
		return nil, fmt.Errorf("state: slot %q holds a %T", name, v)
	}
}

// SameShapeJSON returns a SlotAs decoder for a slot whose JSON has kept the
// same shape from version oldest to version current: those versions are
// unmarshalled into a fresh *T (empty data gives the zero T); any other
// version is an error naming owner, the hook.
func SameShapeJSON[T any, PT interface {
	*T
	Slot
}](owner string, oldest, current int) func(version int, data []byte) (PT, error) {
	return func(version int, data []byte) (PT, error) {
		switch {
		case version > current:
			return nil, fmt.Errorf("%s: slot version %d is newer than this build reads (%d)", owner, version, current)
		case version < oldest:
			return nil, fmt.Errorf("%s: slot version %d is older than this build reads (%d)", owner, version, oldest)
		}
		s := PT(new(T))
		if len(data) > 0 {
			if err := json.Unmarshal(data, s); err != nil {
				return nil, fmt.Errorf("%s: slot version %d: %w", owner, version, err)
			}
		}
		return s, nil
	}
}

// SameShapeFast is SameShapeJSON with a hand-written decoder tried first:
// fast decodes data of a version from oldest to current into a fresh *T
// as encoding/json would, or reports false, and encoding/json, the
// reference, then reads it.
func SameShapeFast[T any, PT interface {
	*T
	Slot
}](owner string, oldest, current int, fast func(data []byte, s PT) bool) func(version int, data []byte) (PT, error) {
	slow := SameShapeJSON[T, PT](owner, oldest, current)
	return func(version int, data []byte) (PT, error) {
		if version >= oldest && version <= current && len(data) > 0 {
			if s := PT(new(T)); fast(data, s) {
				return s, nil
			}
		}
		return slow(version, data)
	}
}

// SlotForUpdate returns the slot called name for an effect to change: a
// copy of the slot as SlotAs reads it (CloneSlot), stored in s in its
// place, so copies of s that shared it are not changed; or a fresh zero *T
// stored in s when s has none. Its error is SlotAs's: a stored slot that
// cannot be read is left as it is (the caller should then change nothing,
// so nothing it holds is lost).
func SlotForUpdate[T any, PT interface {
	*T
	Slot
}](s *Session, name string, decode func(version int, data []byte) (PT, error)) (PT, error) {
	sl, err := SlotAs(s, name, decode)
	if err != nil {
		return nil, err
	}
	if sl != nil {
		own, ok := sl.CloneSlot().(PT)
		if !ok {
			return nil, fmt.Errorf("state: slot %q: CloneSlot returned another type than %T", name, sl)
		}
		s.Slots[name] = own
		return own, nil
	}
	sl = PT(new(T))
	s.SetSlot(name, sl)
	return sl, nil
}
