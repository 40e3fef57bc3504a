package responses

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// This file reports the splicer's tool calls to a CallObserver while they
// stream (rewrite.CallObserving). A function_call or custom_tool_call
// output item is a call, started by its first event (output_item.added:
// call_id, name); the fragments are the function_call_arguments.delta and
// custom_tool_call_input.delta values (a custom call's raw input text).
// The first of …arguments.done, …input.done and output_item.done ends it,
// carrying the whole arguments when no delta did. The view Index is the
// call's position among the stream's call items in order of first event
// (output_index order, ParseReply's).

var _ rewrite.CallObserving = (*responsesSplicer)(nil)

// ObserveCalls implements rewrite.CallObserving.
func (s *responsesSplicer) ObserveCalls(fn conv.CallObserver) { s.watch.Set(fn) }

// Event type suffixes of a call's argument events.
const (
	respDeltaSuffix = "delta"
	respDoneSuffix  = "done"
)

// watchItem reports an event of call item idx of the current stream, as
// parseRespFields read it (ev for the rare whole-arguments read).
func (s *responsesSplicer) watchItem(idx int64, typ string, f *respFields, ev *rewrite.Event) {
	n := len(s.streams) - 1
	freeform := strings.HasPrefix(typ, respEvInputPrefix)
	if f.item.IsObject() {
		freeform = jsonkit.Member(f.item, "type").Str == "custom_tool_call"
	}
	if !s.watch.Started(n, idx) {
		var id, name string
		if f.item.IsObject() {
			id, name = jsonkit.Member(f.item, "call_id").Str, jsonkit.Member(f.item, "name").Str
		}
		s.watch.Start(n, idx, s.watch.Count(n), id, name, freeform, "")
	}
	member := "arguments"
	if freeform {
		member = "input"
	}
	switch {
	case typ == respEvArgsPrefix+respDeltaSuffix || typ == respEvInputPrefix+respDeltaSuffix:
		s.watch.Args(n, idx, f.delta.Str)
	case typ == respEvArgsPrefix+respDoneSuffix || typ == respEvInputPrefix+respDoneSuffix:
		frag := ""
		if !s.watch.HasArgs(n, idx) {
			frag = gjson.GetBytes(ev.Data, member).Str
		}
		s.watch.Done(n, idx, frag)
	case typ == respEvItemAdded:
		if !s.watch.HasArgs(n, idx) {
			s.watch.Args(n, idx, jsonkit.Member(f.item, member).Str)
		}
	case typ == respEvItemDone:
		frag := ""
		if !s.watch.HasArgs(n, idx) {
			frag = jsonkit.Member(f.item, member).Str
		}
		s.watch.Done(n, idx, frag)
	}
}
