package anthropic

import (
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// This file reports the splicer's tool calls to a CallObserver while they
// stream (rewrite.CallObserving): a tool_use block is a call, started by
// its content_block_start (ID, Name), its input_json_delta partial_json
// values are the fragments, its content_block_stop is Done. A block
// without partial_json gets its start's input (or {}) as the one fragment,
// as Reply gives it. The view Index of a call is its position among the
// stream's tool_use blocks (ParseReply's order).

var _ rewrite.CallObserving = (*anthropicSplicer)(nil)

// ObserveCalls implements rewrite.CallObserving.
func (s *anthropicSplicer) ObserveCalls(fn conv.CallObserver) { s.watch.Set(fn) }

// watchStream is the current stream's number for the observer.
func (s *anthropicSplicer) watchStream() int { return s.streams - 1 }

// watchStart reports the start of tool_use block up; cb is its
// content_block object.
func (s *anthropicSplicer) watchStart(up int64, cb gjson.Result) {
	n := s.watchStream()
	s.watch.Start(n, up, s.watch.Count(n), cb.Get("id").Str, cb.Get("name").Str, false, "")
}

// watchBlock reports a delta (isDelta) or the stop of block b, already
// read into d; blocks that are not watched calls are ignored.
func (s *anthropicSplicer) watchBlock(b *asBlock, d *asDelta, isDelta bool) {
	n := s.watchStream()
	if isDelta {
		if d.typ == "input_json_delta" {
			s.watch.Args(n, b.up, d.val.Str)
		}
		return
	}
	if !s.watch.Started(n, b.up) {
		return
	}
	frag := ""
	if len(b.input) == 0 {
		frag = "{}"
		if in := gjson.GetBytes(b.start, "input"); in.Exists() {
			frag = in.Raw
		}
	}
	s.watch.Done(n, b.up, frag)
}
