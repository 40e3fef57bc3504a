package eval

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks/intents"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// Score is got out of of; Of 0 means the score does not apply (nothing to
// score: no write, no refusal, no continuation).
type Score struct {
	Got int `json:"got"`
	Of  int `json:"of"`
}

// Full reports whether the score applies and is full marks.
func (s Score) Full() bool { return s.Of > 0 && s.Got == s.Of }

// Value is Got/Of, and false when the score does not apply.
func (s Score) Value() (float64, bool) {
	if s.Of == 0 {
		return 0, false
	}
	return float64(s.Got) / float64(s.Of), true
}

// String is "got/of", or "–" when the score does not apply.
func (s Score) String() string {
	if s.Of == 0 {
		return "–"
	}
	return fmt.Sprintf("%d/%d", s.Got, s.Of)
}

// Add sums two scores (for totals).
func (s Score) Add(o Score) Score { return Score{s.Got + o.Got, s.Of + o.Of} }

// Call fates as the live feed reports them.
const (
	fateAllowed = "allowed"
	fateClaimed = "claimed"
	fateRefused = "refused"
)

// modelCall is one tool call the model made, in the order it made them,
// with what shepherd did with it.
type modelCall struct {
	Name string
	Args string // canonical JSON
	ID   string
	Fate string // allowed, claimed, refused, or "" (dropped, undelivered)
}

// modelCalls lists the calls of the model's replies (the tap's responses,
// read with d) with their fates from the feed: matched by call id, or, for
// a call whose id the feed does not name, by the next call event of its
// tool.
func modelCalls(d kit.Driver, exchanges []Exchange, evs []events.Event) []modelCall {
	type fate struct{ tool, id, fate string }
	var fates []fate
	byID := map[string]string{}
	for _, e := range evs {
		f := ""
		switch e.Type {
		case events.CallAllowed:
			f = fateAllowed
		case events.CallClaimed:
			f = fateClaimed
		case events.CallRefused:
			f = fateRefused
		default:
			continue
		}
		id, _ := e.Data["call_id"].(string)
		tool, _ := e.Data["tool"].(string)
		fates = append(fates, fate{tool, id, f})
		if id != "" {
			byID[id] = f
		}
	}
	var out []modelCall
	next := 0
	for _, ex := range exchanges {
		for _, u := range ex.Upstream {
			if u.Status != 200 {
				continue
			}
			r, err := d.ParseReply(u.Response)
			if err != nil {
				continue
			}
			for _, c := range r.Calls {
				mc := modelCall{Name: c.Name, Args: canonicalJSON(c.Args), ID: c.ID}
				if f, ok := byID[c.ID]; ok && c.ID != "" {
					mc.Fate = f
				} else {
					for k := next; k < len(fates); k++ {
						if fates[k].tool == c.Name {
							mc.Fate, next = fates[k].fate, k+1
							break
						}
					}
				}
				out = append(out, mc)
			}
		}
	}
	return out
}

// canonicalJSON re-encodes raw JSON with sorted keys and no spaces, so two
// equal argument objects compare equal; invalid JSON is kept as it is.
func canonicalJSON(raw string) string {
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return string(b)
}

// selects reports whether c is a successful intent selection: a
// select_active_intent call shepherd answered (not refused) that names an
// intent.
func (c modelCall) selects() bool {
	return c.Name == intents.IntentTool && c.Fate == fateClaimed && gjson.Get(c.Args, "intent_id").String() != ""
}

// scoreChapters scores the chapters opened (titles, in order) against the
// task's phases: how many phases were opened in the expected order (the
// longest run of titles whose phases strictly increase) out of how many
// the task has. It also returns each title's phase ("" when none).
func scoreChapters(phases []Phase, titles []string) (Score, []string) {
	var idx []int
	names := make([]string, len(titles))
	for i, t := range titles {
		if p := phaseOf(phases, t); p >= 0 {
			idx = append(idx, p)
			names[i] = phases[p].Name
		}
	}
	return Score{Got: longestIncreasing(idx), Of: len(phases)}, names
}

// longestIncreasing is the length of the longest strictly increasing
// subsequence of xs.
func longestIncreasing(xs []int) int {
	best := make([]int, len(xs))
	n := 0
	for i := range xs {
		best[i] = 1
		for j := range i {
			if xs[j] < xs[i] && best[j]+1 > best[i] {
				best[i] = best[j] + 1
			}
		}
		n = max(n, best[i])
	}
	return n
}

// scoreIntent: 1/1 when a successful intent selection precedes the
// model's first write attempt (whatever became of it), 0/1 when not, –
// when the model never tried to write.
func scoreIntent(calls []modelCall) Score {
	for _, c := range calls {
		if c.selects() {
			for _, w := range calls {
				if w.Name == ToolWrite {
					return Score{Got: 1, Of: 1}
				}
			}
			return Score{}
		}
		if c.Name == ToolWrite {
			return Score{Got: 0, Of: 1}
		}
	}
	return Score{}
}

// scoreRefusals: of the calls shepherd refused, how many the model did
// not send again identically (same tool, same arguments) before it
// selected an intent (after which the same call may be in scope).
func scoreRefusals(calls []modelCall) Score {
	var s Score
	for i, c := range calls {
		if c.Fate != fateRefused {
			continue
		}
		s.Of++
		respected := true
		for _, later := range calls[i+1:] {
			if later.selects() {
				break
			}
			if later.Name == c.Name && later.Args == c.Args {
				respected = false
				break
			}
		}
		if respected {
			s.Got++
		}
	}
	return s
}

// continued is one exchange in which shepherd continued a reply the
// output limit cut, and whether the agent got it seamless.
type continued struct {
	Seamless bool
	Why      string // what was wrong ("" when seamless)
}

// checkContinuations finds the exchanges where a model reply was cut by
// the output limit (read from the tap) and checks what the agent got:
// not cut (its stop is not the cut stop), and whole (its text is exactly
// the model's pieces joined, so nothing was lost, doubled or added at the
// seam). expected, when given, are the whole texts the script's cut
// replies make, in order; the agent's text must hold each.
func checkContinuations(d kit.Driver, exchanges []Exchange, expected []string) []continued {
	var out []continued
	stops := d.Stops()
	for _, ex := range exchanges {
		var pieces []string
		cut := false
		for _, u := range ex.Upstream {
			if u.Status != 200 {
				continue
			}
			r, err := d.ParseReply(u.Response)
			if err != nil {
				continue
			}
			pieces = append(pieces, r.Text)
			cut = cut || isCut(stops, r)
		}
		if !cut {
			continue
		}
		c := continued{Seamless: true}
		whole := strings.Join(pieces, "")
		switch {
		case ex.Err != "":
			c.Why = "the exchange failed: " + ex.Err
		case isCut(stops, ex.Reply):
			c.Why = "the agent's reply is still cut (stop " + ex.Reply.Stop + ")"
		case ex.Reply.Text != whole:
			c.Why = fmt.Sprintf("the agent's text (%d bytes) is not the model's pieces joined (%d bytes)", len(ex.Reply.Text), len(whole))
		case len(out) < len(expected) && !strings.Contains(ex.Reply.Text, expected[len(out)]):
			c.Why = "the agent's text lacks the script's whole reply"
		}
		c.Seamless = c.Why == ""
		out = append(out, c)
	}
	return out
}

// isCut reports whether r stopped at the output limit.
func isCut(s kit.Stops, r kit.Reply) bool {
	if s.CutDetail != "" {
		return r.Stop == s.Cut && r.Incomplete == s.CutDetail
	}
	return r.Stop == s.Cut
}

// tokensOf estimates the tokens of a request body as the mock does (4
// bytes a token).
func tokensOf(b []byte) int { return len(b) / 4 }

// number reads an integer from an event's data (int, int64 or float64,
// as emitted or decoded).
func number(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}
