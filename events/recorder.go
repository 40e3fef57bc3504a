package events

import "sync"

// Recorder is an Emitter that keeps every event in memory, in the order
// emitted: for tests, and for tools that read back what the proxy reported
// (bench/eval). The zero value is ready to use; it is safe for concurrent
// use.
type Recorder struct {
	mu  sync.Mutex
	evs []Event
}

// Emit implements Emitter. An event's typed Fields are kept as its Data,
// so readers find every event's data in Data.
func (r *Recorder) Emit(ev Event) {
	if ev.Fields != nil {
		ev.Data, ev.Fields = ev.Fields.Map(), nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

// All returns a copy of the events so far.
func (r *Recorder) All() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.evs...)
}

// Of returns the events of type typ so far.
func (r *Recorder) Of(typ Type) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}
