package rewrite

import "github.com/shepherd-proxy/shepherd/rewrite/conv"

// CallWatch is a stream splicer's bookkeeping for its CallObserver
// (CallObserving): it turns what the splicer already parsed of a tool call
// into conv.ToolCallDelta values and keeps their contract: the first delta
// of a call carries its ID and Name, no fragment is reported empty, and
// nothing of a call follows its Done.
//
// The splicer identifies a call within its stream by a key of its own (the
// wire's block, tool or output index) and gives, when the call starts, the
// call's Index in the stream's reply view. Stream numbers come from the
// splicer (0 for the first stream, one more per Next or Continue); a call
// event of a later stream forgets the calls of the earlier one.
//
// The zero value watches nothing; every method but Set is to be called only
// when On reports true, so a splicer without an observer does no work for
// it.
type CallWatch struct {
	fn     conv.CallObserver
	stream int
	calls  []watchedCall
}

// watchedCall is one call of the current stream.
type watchedCall struct {
	key      int64
	index    int
	args     bool // a non-empty fragment was reported
	done     bool
	freeform bool
}

// Set sets the observer (nil removes it) and forgets every call.
func (w *CallWatch) Set(fn conv.CallObserver) {
	w.fn, w.stream, w.calls = fn, 0, w.calls[:0]
}

// On reports whether an observer is set.
func (w *CallWatch) On() bool { return w.fn != nil }

// at moves the watch to stream n (forgetting the calls of an earlier
// stream) and returns the call with key, nil when it did not start.
func (w *CallWatch) at(n int, key int64) *watchedCall {
	if n != w.stream {
		w.stream, w.calls = n, w.calls[:0]
	}
	for i := len(w.calls) - 1; i >= 0; i-- { // the latest call is the likeliest
		if w.calls[i].key == key {
			return &w.calls[i]
		}
	}
	return nil
}

// Started reports whether the call with key started in stream n.
func (w *CallWatch) Started(n int, key int64) bool { return w.at(n, key) != nil }

// HasArgs reports whether a fragment of the call with key of stream n was
// reported (false for a call that did not start).
func (w *CallWatch) HasArgs(n int, key int64) bool {
	c := w.at(n, key)
	return c != nil && c.args
}

// Count returns how many calls started in stream n: the view Index of the
// next call where calls are viewed in the order they start.
func (w *CallWatch) Count(n int) int {
	w.at(n, -1)
	return len(w.calls)
}

// Start reports the first delta of a call of stream n: its key, view index,
// ID, Name and a first fragment (may be empty). A call that started already
// is not started again (frag is then reported as a fragment).
func (w *CallWatch) Start(n int, key int64, index int, id, name string, freeform bool, frag string) {
	if c := w.at(n, key); c != nil {
		w.Args(n, key, frag)
		return
	}
	w.calls = append(w.calls, watchedCall{key: key, index: index, args: frag != "", freeform: freeform})
	w.fn(conv.ToolCallDelta{Stream: n, Index: index, ID: id, Name: name, Fragment: frag, Freeform: freeform})
}

// Args reports the next fragment of a call of stream n; an empty fragment,
// or one of a call that did not start or is done, is not reported.
func (w *CallWatch) Args(n int, key int64, frag string) {
	c := w.at(n, key)
	if c == nil || c.done || frag == "" {
		return
	}
	c.args = true
	w.fn(conv.ToolCallDelta{Stream: n, Index: c.index, Fragment: frag, Freeform: c.freeform})
}

// Done reports the last delta of a call of stream n, with a last fragment
// (may be empty); nothing for a call that did not start or is done.
func (w *CallWatch) Done(n int, key int64, frag string) {
	c := w.at(n, key)
	if c == nil || c.done {
		return
	}
	c.done = true
	c.args = c.args || frag != ""
	w.fn(conv.ToolCallDelta{Stream: n, Index: c.index, Fragment: frag, Freeform: c.freeform, Done: true})
}

// Whole reports a call of stream n that arrived complete as one delta with
// Done set (nothing when it started already).
func (w *CallWatch) Whole(n int, key int64, index int, id, name string, freeform bool, args string) {
	if w.at(n, key) != nil {
		return
	}
	w.calls = append(w.calls, watchedCall{key: key, index: index, args: args != "", done: true, freeform: freeform})
	w.fn(conv.ToolCallDelta{Stream: n, Index: index, ID: id, Name: name, Fragment: args, Freeform: freeform, Done: true})
}

// DoneAll reports Done for every call of stream n that started and is not
// done, in the order they started (a stream whose end closes its calls).
func (w *CallWatch) DoneAll(n int) {
	w.at(n, -1)
	for i := range w.calls {
		if c := &w.calls[i]; !c.done {
			c.done = true
			w.fn(conv.ToolCallDelta{Stream: n, Index: c.index, Freeform: c.freeform, Done: true})
		}
	}
}
