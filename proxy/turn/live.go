package turn

import "github.com/shepherd-proxy/shepherd/state"

// accept adds the effects of a reply decision to the turn's (saved with
// it) and applies them to the turn's live view of the session
// (hooks.Call.Live): a clone of the loaded session made when the turn's
// first effects arrive (a turn without effects clones nothing), then
// updated in place. Call.Session becomes that view too, so later rounds'
// reply hooks see the state as the earlier replies left it (an intent
// selected by one reply governs the follow-up's calls). The loaded session
// itself (the save's compare-and-set base) is never changed.
func (t *Turn) accept(fxs []func(*state.Session)) {
	if len(fxs) == 0 {
		return
	}
	t.effects = append(t.effects, fxs...)
	if t.call.Session == nil {
		return
	}
	if t.call.Live == nil {
		t.call.Live = t.call.Session.Clone()
	}
	for _, fx := range fxs {
		fx(t.call.Live)
	}
	t.call.Session = t.call.Live
}
