package turn

import "github.com/shepherd-proxy/shepherd/rewrite/conv"

// CallObserving is implemented by a Writer that can report the tool calls
// of the replies it reads while they arrive (a stream writer whose splicer
// is a rewrite.CallObserving). ObserveCalls is called once, before the
// first Read; the writer reports each reply's calls with Stream counting
// the replies it read before (the engine's rounds).
type CallObserving interface {
	ObserveCalls(fn conv.CallObserver)
}

// callWatch hands a turn's tool calls to the chain's observer
// (hooks.CallWatcher): as the writer reports them while a reply streams,
// then, once each reply is parsed and before the reply hooks decide it,
// what the writer did not report (every call of a JSON reply, a call it
// never closed) from the reply's view. It never reports a call twice nor
// anything of a call after its Done. It runs on the reply's goroutine.
type callWatch struct {
	fn      conv.CallObserver
	stream  int         // the stream calls tracks
	calls   []callState // by view Index
	replies int         // the parsed replies so far (reply's stream number)
}

type callState struct{ started, done bool }

// watchCalls asks the chain for the turn's observer, once, before the first
// reply is read, and gives it to w when w can observe streamed calls.
func (t *Turn) watchCalls(w Writer) {
	fn := t.chain.WatchCalls(&t.call)
	if fn == nil {
		return
	}
	t.watch = &callWatch{fn: fn}
	if co, ok := w.(CallObserving); ok {
		co.ObserveCalls(t.watch.observe)
	}
}

// state returns the state of call index of stream n (the calls of an
// earlier stream are forgotten); nil for a stream already passed.
func (w *callWatch) state(n, index int) *callState {
	if n < w.stream || index < 0 {
		return nil
	}
	if n > w.stream {
		w.stream, w.calls = n, w.calls[:0]
	}
	for len(w.calls) <= index {
		w.calls = append(w.calls, callState{})
	}
	return &w.calls[index]
}

// observe is the writer's observer: it passes d on unless its call is done.
func (w *callWatch) observe(d conv.ToolCallDelta) {
	st := w.state(d.Stream, d.Index)
	if st == nil || st.done {
		return
	}
	st.started, st.done = true, d.Done
	w.fn(d)
}

// reply reports the calls of the next parsed reply that the writer did not
// complete: a call not reported at all as one delta with Done (free-form
// calls with their raw input text), a started one with a Done delta.
func (w *callWatch) reply(view *conv.Reply) {
	if w == nil {
		return
	}
	n := w.replies
	w.replies++
	for _, c := range view.ToolCalls {
		st := w.state(n, c.Index)
		if st == nil || st.done {
			continue
		}
		d := conv.ToolCallDelta{Stream: n, Index: c.Index, Freeform: c.Freeform, Done: true}
		if !st.started {
			d.ID, d.Name, d.Fragment = c.ID, c.Name, string(conv.CallInput(c.Args, c.Freeform))
		}
		st.started, st.done = true, true
		w.fn(d)
	}
}
