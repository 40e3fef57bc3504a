package gemini

import (
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// This file reports the splicer's tool calls to a CallObserver
// (rewrite.CallObserving). A Gemini functionCall part arrives whole, so
// each is one delta with Done set: id, name and the raw args JSON, as the
// chunk carrying it is fed. The view Index is the part's position among the
// stream's functionCall parts (ParseReply's order).

var _ rewrite.CallObserving = (*geminiSplicer)(nil)

// ObserveCalls implements rewrite.CallObserving.
func (s *geminiSplicer) ObserveCalls(fn conv.CallObserver) { s.watch.Set(fn) }

// watchCall reports fc, the functionCall object of the part just recorded
// as the stream's last call.
func (s *geminiSplicer) watchCall(fc gjson.Result) {
	i := len(s.calls) - 1
	s.watch.Whole(s.stream, int64(i), i, fc.Get("id").Str, fc.Get("name").Str, false, fc.Get("args").Raw)
}
