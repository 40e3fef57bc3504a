package turn

import "github.com/shepherd-proxy/shepherd/state"

// Session is the session Begin loaded for the turn (read-only), and false
// when the store could not be read (the session is then an empty
// stand-in). The proxy's routing reads the decision the session began
// with from it.
func (t *Turn) Session() (*state.Session, bool) {
	return t.call.Session, t.call.Session != nil && !t.call.StateUnavailable
}

// AddEffect adds fx to the changes saved with the turn, after the ones the
// hooks ask for; like theirs, it must be free of side effects other than
// on its argument (the save may retry it). Call it before Run.
func (t *Turn) AddEffect(fx func(*state.Session)) { t.effects = append(t.effects, fx) }
