package hooks

import "github.com/shepherd-proxy/shepherd/rewrite/conv"

// CallWatcher is implemented by a hook that watches tool calls while a
// reply arrives, before the reply hooks decide them (edits announces a
// file edit as soon as its path is known).
//
// Contract:
//   - WatchCalls is called once per turn, before the first reply is read,
//     and returns the observer for that turn's calls, or nil to watch
//     nothing. The observer sees every call of every upstream round of
//     the turn (conv.ToolCallDelta's contract), streamed or JSON.
//   - The observer only observes: it cannot change the reply or delay it;
//     it runs on the reply's goroutine and must return quickly (enqueue,
//     never wait on I/O).
//   - It sees calls the reply hooks may later refuse or claim: what became
//     of each call is told to OutcomeHook.
type CallWatcher interface {
	Hook
	WatchCalls(call *Call) conv.CallObserver
}

// WatchCalls returns one observer that hands each delta to the observers
// of every CallWatcher of the chain, in chain order, or nil when none
// watches this turn.
func (c *Chain) WatchCalls(call *Call) conv.CallObserver {
	if c == nil {
		return nil
	}
	var obs []conv.CallObserver
	for _, h := range c.hooks {
		w, ok := h.(CallWatcher)
		if !ok {
			continue
		}
		if o := w.WatchCalls(call); o != nil {
			obs = append(obs, o)
		}
	}
	switch len(obs) {
	case 0:
		return nil
	case 1:
		return obs[0]
	}
	return func(d conv.ToolCallDelta) {
		for _, o := range obs {
			o(d)
		}
	}
}
