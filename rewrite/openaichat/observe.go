package openaichat

import (
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// This file reports the splicer's tool calls to a CallObserver while they
// stream (rewrite.CallObserving). A call starts once its name is known
// (with the arguments that came before it as the first fragment); each
// later function.arguments value is a fragment. Chat has no per-call
// close: every started call of choice 0 is Done when the chunk carrying
// finish_reason arrives (or [DONE]). The view Index is the call's position
// in order of first appearance (ParseReply's order, as Reply writes it).

var _ rewrite.CallObserving = (*chatSplicer)(nil)

// ObserveCalls implements rewrite.CallObserving.
func (s *chatSplicer) ObserveCalls(fn conv.CallObserver) { s.watch.Set(fn) }

// watchCall reports frag, the arguments fragment just added to call.
func (s *chatSplicer) watchCall(call *chatSpliceCall, frag string) {
	idx := -1
	for i := range s.cur.calls {
		if &s.cur.calls[i] == call {
			idx = i
			break
		}
	}
	if idx < 0 {
		return
	}
	key := int64(idx)
	if s.watch.Started(s.stream, key) {
		s.watch.Args(s.stream, key, frag)
		return
	}
	if !call.hasName {
		return // its arguments are kept in call.args until the name comes
	}
	first := frag
	if len(call.args) != len(frag) {
		first = string(call.args)
	}
	s.watch.Start(s.stream, key, idx, call.id, call.name, false, first)
}

// watchEnd reports Done for the started calls of the current stream.
func (s *chatSplicer) watchEnd() { s.watch.DoneAll(s.stream) }
