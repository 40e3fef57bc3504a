package topics

import (
	"time"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
)

// chapterOpened emits chapter.opened for title, the newest of titles (the
// chapters this reply opens so far); previous is the chapter it follows.
func (t *Hook) chapterOpened(call *hooks.Call, title string, titles []string, now time.Time) {
	if t.cfg.Events == nil {
		return
	}
	previous := ""
	if n := len(titles); n > 1 {
		previous = titles[n-2]
	} else if st, err := stateOf(call.Session); err == nil {
		previous = st.Active()
	}
	t.cfg.Events.Emit(events.Event{
		Type: events.ChapterOpened, At: now, Session: call.SessionID, Tenant: call.Tenant,
		Route: call.Route, RequestID: call.RequestID,
		Data: map[string]any{"title": title, "previous": previous},
	})
}
