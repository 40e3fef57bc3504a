package edits

import (
	"github.com/shepherd-proxy/shepherd/hooks/edits/recognize"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// existing replays msgs for one question only: which files the session
// knows to exist, or to be gone, after its history. A read that did not
// fail (whole or partial) proves its file exists; a successful write makes
// its files exist, a deletion gone. It reads the calls' paths with a
// Watch, as the stream is read (no content is parsed, applied or
// copied), so the stream's watcher can ask it on the reply's goroutine:
// history, which also rebuilds contents for the journal, runs after the
// reply.
func existing(t *recognize.Table, msgs []conv.Message) map[string]bool {
	out := map[string]bool{}
	replayResults(msgs, func(c callRef, _ string) {
		if path, ok := t.ReadPath(c.name, c.args); ok {
			out[path] = true
			return
		}
		w := t.Watch(c.name, c.freeform)
		if w == nil {
			return
		}
		for _, s := range append(w.Feed(string(conv.CallInput(c.args, c.freeform))), w.Finish()...) {
			out[s.Path] = s.Op != recognize.OpDelete
		}
	})
	return out
}
