package console

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks/intents"
	"github.com/shepherd-proxy/shepherd/hooks/topics"
	"github.com/shepherd-proxy/shepherd/state"
)

// This file turns what the store keeps (the session record, its slots, its
// events) into what the pages show. Nothing here writes HTML: the
// templates do, and html/template escapes every value.

// sessionRow is one line of the sessions list.
type sessionRow struct {
	ID, Tenant, URL     string
	Agent, Model        string
	Topic, Intent       string
	Started, LastActive time.Time
	Turns               int64
	Chapters, Refusals  int64
	Usage               state.Usage
	CacheHit            string
}

// listFilter is the sessions list's search (q: a substring of the id,
// tenant, agent, model, topic or intent, any case), agent (exact, any
// case) and refused (only sessions with a refusal).
type listFilter struct {
	Q, Agent string
	Refused  bool
}

func (f listFilter) keep(r sessionRow) bool {
	if f.Agent != "" && !strings.EqualFold(f.Agent, r.Agent) {
		return false
	}
	if f.Refused && r.Refusals == 0 {
		return false
	}
	if f.Q == "" {
		return true
	}
	q := strings.ToLower(f.Q)
	for _, s := range []string{r.ID, r.Tenant, r.Agent, r.Model, r.Topic, r.Intent} {
		if strings.Contains(strings.ToLower(s), q) {
			return true
		}
	}
	return false
}

func rowOf(s state.Summary) sessionRow {
	return sessionRow{
		ID: s.ID, Tenant: s.Tenant, URL: sessionURL(s.ID, s.Tenant),
		Agent: s.Agent, Model: s.Model,
		Topic: s.Notes[topics.Name], Intent: s.Notes[intents.Name],
		Started: s.CreatedAt, LastActive: s.UpdatedAt,
		Turns:    s.Requests,
		Chapters: s.Counts["chapters"], Refusals: s.Counts["refusals"],
		Usage:    s.Usage,
		CacheHit: hitRatio(s.Usage.InputTokens, s.Usage.CacheReadTokens, s.Usage.CacheWriteTokens),
	}
}

// hitRatio is the prompt-cache hit ratio cache_read / (input + cache_read +
// cache_write) as a percentage, "–" when no prompt token was counted.
func hitRatio(input, read, write int64) string {
	total := input + read + write
	if total <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(read)/float64(total))
}

// sessionView is the session page's data.
type sessionView struct {
	ID, Tenant   string
	Agent, Model string
	Created      time.Time
	Updated      time.Time
	Requests     int64
	Usage        state.Usage
	CacheHit     string
	Topic        string
	Intent       intentView
	Chapters     []*chapterView
	// DroppedChapters and DroppedCalls count what the session no longer
	// keeps (topics.max_chapters, topics.max_calls): the oldest.
	DroppedChapters, DroppedCalls int64
	Activity                      []activityRow
	EventsKept                    bool // the store keeps events (the timeline shows turns)
	Refusals                      int
	Continuations                 int
	// Prefix is the cache-integrity pane: the last turns, newest first.
	Prefix []prefixRow
}

// intentView is the session's intent: its id from the intents slot, its
// description and acceptance criteria from the latest intent.selected
// event.
type intentView struct {
	ID, Description string
	Criteria        []string
}

// chapterView is one chapter of the timeline and what happened under it.
type chapterView struct {
	Number    int // 1-based; 0 for what came before the first chapter
	Title     string
	StartedAt time.Time
	Current   bool
	Items     []*itemView
}

// itemView is one line of the timeline: a tool call (with its fate), a
// turn (with its tokens) or a continuation.
type itemView struct {
	Kind string // "call", "turn", "continuation"
	At   time.Time
	// Calls: the tool, the call id and what became of it: "allowed",
	// "claimed" (shepherd answered), "refused", "observed" (would have been
	// refused; observe mode), "held", "approved", "denied".
	Tool, CallID string
	Status       string
	Reason, Rule string
	By, Note     string
	Approval     string
	// Turns.
	Turn *turnView
	// Continuations.
	Attempt int64
	Stop    string
}

// turnView is one request.finished event.
type turnView struct {
	Model                                string
	Status                               int64
	DurationMS                           int64
	Input, Output, CacheRead, CacheWrite int64
	CacheHit                             string
	CostUSD                              float64
	Stop, Error                          string
	Rounds, Continuations                int64
	// Prefix is the turn's cache-integrity words (prefixStatus).
	Prefix string
}

// activityRow is one event of the activity list.
type activityRow struct {
	ID      string
	At      time.Time
	Type    string
	Summary string
}

// maxActivity bounds the activity list (newest first).
const maxActivity = 100

// buildSession assembles the session page from the record and its events.
func buildSession(s *state.Session, evs []events.Event, eventsKept bool) *sessionView {
	v := &sessionView{
		ID: s.ID, Tenant: s.Tenant, Agent: s.Agent, Model: s.Model,
		Created: s.CreatedAt, Updated: s.UpdatedAt, Requests: s.Requests, Usage: s.Usage,
		CacheHit:   hitRatio(s.Usage.InputTokens, s.Usage.CacheReadTokens, s.Usage.CacheWriteTokens),
		EventsKept: eventsKept, Prefix: prefixRows(s),
	}
	tp, _ := topics.Of(s)
	in, _ := intents.Of(s)
	v.Topic = tp.Active()
	v.Intent.ID = in.Active()
	if tp != nil {
		v.DroppedChapters, v.DroppedCalls = tp.ChaptersDropped, tp.CallsDropped
	}

	tl := newTimeline(tp, evs)
	if in != nil {
		for _, a := range in.Audit {
			tl.audit(a)
		}
	}
	for _, ev := range evs {
		tl.event(ev, &v.Intent)
	}
	v.Chapters = tl.place()
	for _, ch := range v.Chapters {
		for _, it := range ch.Items {
			switch {
			case it.Kind == "continuation":
				v.Continuations++
			case it.Status == "refused" || it.Status == "denied":
				v.Refusals++
			}
		}
	}
	if n := len(v.Chapters); n > 0 && v.Chapters[n-1].Number > 0 {
		v.Chapters[n-1].Current = true
	}
	for i := len(evs) - 1; i >= 0 && len(v.Activity) < maxActivity; i-- {
		v.Activity = append(v.Activity, activityOf(evs[i]))
	}
	return v
}

// timeline collects chapters and items before placing items into their
// chapters by time.
type timeline struct {
	chapters []*chapterView
	loose    []*itemView          // items not yet in a chapter
	calls    map[string]*itemView // by call id
}

func newTimeline(tp *topics.State, evs []events.Event) *timeline {
	tl := &timeline{calls: map[string]*itemView{}}
	if tp != nil && len(tp.Chapters) > 0 {
		for i, c := range tp.Chapters {
			ch := &chapterView{Number: int(tp.ChaptersDropped) + i + 1, Title: c.Title, StartedAt: c.StartedAt}
			for _, n := range c.Calls {
				it := &itemView{Kind: "call", At: n.At, Tool: n.Name, CallID: n.ID, Status: "allowed"}
				ch.Items = append(ch.Items, it)
				if n.ID != "" {
					tl.calls[n.ID] = it
				}
			}
			tl.chapters = append(tl.chapters, ch)
		}
		return tl
	}
	// No topics slot (topics off, or a store that lost it): the chapters
	// the events announced.
	for _, ev := range evs {
		if ev.Type == events.ChapterOpened {
			tl.chapters = append(tl.chapters, &chapterView{Number: len(tl.chapters) + 1, Title: str(ev.Data, "title"), StartedAt: ev.At})
		}
	}
	return tl
}

// call returns the item of call id, creating a loose one when unknown.
func (tl *timeline) call(id, tool string, at time.Time) *itemView {
	if id != "" {
		if it, ok := tl.calls[id]; ok {
			if it.Tool == "" {
				it.Tool = tool
			}
			return it
		}
	}
	it := &itemView{Kind: "call", At: at, Tool: tool, CallID: id, Status: "allowed"}
	tl.loose = append(tl.loose, it)
	if id != "" {
		tl.calls[id] = it
	}
	return it
}

// audit folds one governance decision of the intents slot in.
func (tl *timeline) audit(a intents.AuditEntry) {
	it := tl.call(a.CallID, a.Tool, a.At)
	switch a.Decision {
	case intents.DecisionRefused:
		it.Status, it.Reason, it.Rule = "refused", a.Reason, a.Rule
	case intents.DecisionSelected, intents.DecisionListed:
		it.Status = "claimed"
	}
}

// event folds one event in.
func (tl *timeline) event(ev events.Event, intent *intentView) {
	d := ev.Data
	switch ev.Type {
	case events.IntentSelected:
		if id := str(d, "intent"); id != "" {
			intent.ID = id
		}
		intent.Description = str(d, "description")
		intent.Criteria = strs(d, "criteria")
	case events.CallAllowed:
		tl.call(str(d, "call_id"), str(d, "tool"), ev.At)
	case events.CallClaimed:
		tl.call(str(d, "call_id"), str(d, "tool"), ev.At).Status = "claimed"
	case events.CallRefused:
		it := tl.call(str(d, "call_id"), str(d, "tool"), ev.At)
		it.Status, it.Reason, it.Rule = "refused", str(d, "reason"), str(d, "rule")
		if b, _ := d["observed"].(bool); b {
			it.Status = "observed"
		}
	case events.CallHeld:
		it := tl.call(str(d, "call_id"), str(d, "tool"), ev.At)
		if it.Status != "approved" && it.Status != "denied" {
			it.Status = "held"
		}
		it.Approval, it.Reason, it.Rule = str(d, "approval"), str(d, "reason"), str(d, "rule")
	case events.CallApproved, events.CallDenied:
		it := tl.call(str(d, "call_id"), str(d, "tool"), ev.At)
		it.Status = "approved"
		if ev.Type == events.CallDenied {
			it.Status = "denied"
		}
		it.By, it.Note = str(d, "by"), str(d, "note")
	case events.Continuation:
		tl.loose = append(tl.loose, &itemView{Kind: "continuation", At: ev.At, Attempt: num(d, "attempt"), Stop: str(d, "stop")})
	case events.RequestFinished:
		tl.loose = append(tl.loose, &itemView{Kind: "turn", At: ev.At, Turn: turnOf(d)})
	}
}

// place puts every loose item into the last chapter started at or before
// it (items before the first chapter get a chapter 0 of their own) and
// sorts each chapter's items by time.
func (tl *timeline) place() []*chapterView {
	var before *chapterView
	for _, it := range tl.loose {
		i := len(tl.chapters) - 1
		for i >= 0 && tl.chapters[i].StartedAt.After(it.At) {
			i--
		}
		if i < 0 {
			if before == nil {
				before = &chapterView{Title: "Before the first chapter"}
			}
			before.Items = append(before.Items, it)
			continue
		}
		tl.chapters[i].Items = append(tl.chapters[i].Items, it)
	}
	out := tl.chapters
	if before != nil {
		out = append([]*chapterView{before}, out...)
	}
	for _, ch := range out {
		slices.SortStableFunc(ch.Items, func(a, b *itemView) int { return a.At.Compare(b.At) })
	}
	return out
}

func turnOf(d map[string]any) *turnView {
	u, _ := d["usage"].(map[string]any)
	t := &turnView{
		Model: str(d, "model"), Status: num(d, "status"), DurationMS: num(d, "duration_ms"),
		Input: num(u, "input_tokens"), Output: num(u, "output_tokens"),
		CacheRead: num(u, "cache_read_tokens"), CacheWrite: num(u, "cache_write_tokens"),
		CostUSD: flt(d, "cost_usd"), Stop: str(d, "stop"), Error: str(d, "error"),
		Rounds: num(d, "rounds"), Continuations: num(d, "continuations"),
	}
	t.CacheHit = hitRatio(t.Input, t.CacheRead, t.CacheWrite)
	t.Prefix = prefixStatus(d)
	return t
}

// activityOf is an event's line in the activity list.
func activityOf(ev events.Event) activityRow {
	d := ev.Data
	var s string
	switch ev.Type {
	case events.RequestStarted:
		s = join("request", str(d, "model"), str(d, "side"))
	case events.RequestFinished:
		t := turnOf(d)
		s = join(fmt.Sprintf("reply %d", t.Status), t.Stop,
			fmt.Sprintf("in %s · out %s · cache %s", tokens(t.Input), tokens(t.Output), t.CacheHit), t.Error)
	case events.ChapterOpened:
		s = "chapter “" + str(d, "title") + "”"
	case events.IntentSelected:
		s = join("intent "+str(d, "intent"), str(d, "description"))
	case events.CallAllowed, events.CallClaimed:
		s = str(d, "tool")
	case events.CallRefused:
		s = join(str(d, "tool"), str(d, "reason"))
	case events.CallHeld:
		s = join(str(d, "tool")+" waits for approval", str(d, "reason"))
	case events.CallApproved, events.CallDenied:
		s = join(str(d, "tool"), "by "+str(d, "by"), str(d, "note"))
	case events.Continuation:
		s = join(fmt.Sprintf("attempt %d", num(d, "attempt")), str(d, "stop"))
	case events.EditStarted, events.EditFinished:
		s = join(str(d, "tool"), str(d, "operation"), str(d, "path"))
	case events.RouteSelected:
		s = routeSummary(d)
	default:
		s = contextSummary(ev.Type, d)
	}
	return activityRow{ID: ev.ID, At: ev.At, Type: string(ev.Type), Summary: s}
}

// approvalView is one pending approval with what its buttons post to.
type approvalView struct {
	state.Approval
	SessionURL string
	Action     string // the approvals API URL of this approval
}

func approvalOf(a state.Approval) approvalView {
	return approvalView{Approval: a, SessionURL: sessionURL(a.Session, a.Tenant), Action: approvalAction(a)}
}

// ---- reading event data (JSON decoded into map[string]any) ----

func str(d map[string]any, k string) string {
	s, _ := d[k].(string)
	return s
}

func num(d map[string]any, k string) int64 {
	switch n := d[k].(type) {
	case float64:
		return int64(n)
	case int64:
		return n
	case int:
		return int64(n)
	}
	return 0
}

func flt(d map[string]any, k string) float64 {
	f, _ := d[k].(float64)
	return f
}

func strs(d map[string]any, k string) []string {
	var out []string
	switch l := d[k].(type) {
	case []any:
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	case []string:
		out = l
	}
	return out
}

// join joins the non-empty parts with " · ".
func join(parts ...string) string {
	parts = slices.DeleteFunc(parts, func(s string) bool { return s == "" })
	return strings.Join(parts, " · ")
}

// sortRows orders the list as the store does: most recently active first.
func sortRows(rows []sessionRow) {
	slices.SortStableFunc(rows, func(a, b sessionRow) int { return cmp.Compare(b.LastActive.UnixNano(), a.LastActive.UnixNano()) })
}

// routeSummary is a route.selected line: the rule, then the refusal or
// the model and upstream it chose.
func routeSummary(d map[string]any) string {
	rule := "rule " + str(d, "rule")
	if b, _ := d["refused"].(bool); b {
		return join(rule, "refused")
	}
	to := str(d, "model")
	if req := str(d, "requested_model"); req != "" && req != to {
		to = req + " → " + to
	}
	sticky := ""
	if b, _ := d["sticky"].(bool); b {
		sticky = "kept from the session's start"
	}
	via := ""
	if up := str(d, "upstream"); up != "" {
		via = "via " + up
	}
	return join(rule, to, via, sticky)
}
