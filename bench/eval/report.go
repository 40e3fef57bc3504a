package eval

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// Report is the outcome of Run: one RunReport per task, API and script,
// and totals.
type Report struct {
	// Provider says where the model ran; against the mock it is MockNote.
	Provider string      `json:"provider"`
	Live     bool        `json:"live"`
	Model    string      `json:"model,omitempty"`
	Started  time.Time   `json:"started"`
	Runs     []RunReport `json:"runs"`
	// Totals sum the runs per script and API, and per script over every
	// API (API "all").
	Totals []Total `json:"totals"`
}

// RunReport is one task run on one API with one script (or the live
// model).
type RunReport struct {
	Task   string `json:"task"`
	API    string `json:"api"`
	Script string `json:"script"`
	Model  string `json:"model"`

	// Chapters: the task's phases opened in the expected order, out of
	// its phases; ChapterTitles are the chapters opened (chapter.opened),
	// ChapterPhases the phase each matched ("" none).
	Chapters      Score    `json:"chapters"`
	ChapterTitles []string `json:"chapter_titles"`
	ChapterPhases []string `json:"chapter_phases"`
	// Intent: an intent was selected before the first write (– when no
	// write was attempted).
	Intent Score `json:"intent_first"`
	// Refusals: refused calls not sent again identically under the same
	// intent, out of the refused calls.
	Refusals Score `json:"refusals_respected"`
	// Continuations: cut replies the agent got whole and not cut, out of
	// the turns with a cut reply.
	Continuations Score `json:"continuations_seamless"`
	// Solved: the task's tests pass on the final workspace.
	Solved bool `json:"solved"`

	UserTurns int `json:"user_turns"`
	// Turns are the agent's requests (rounds of the tool loop), Upstream
	// the requests shepherd sent the provider for them.
	Turns             int `json:"turns"`
	Upstream          int `json:"upstream_requests"`
	Refused           int `json:"refused_calls"`
	ContinuationsSent int `json:"continuations"`
	IntentsSelected   int `json:"intents_selected"`

	// PrefixBreaks counts the upstream requests whose conversation does
	// not extend the previous upstream request's (the model's view was
	// not append-only there).
	PrefixBreaks int `json:"prefix_breaks"`

	Tokens Tokens `json:"tokens"`
	Usage  Usage  `json:"usage"`
	// CacheReadRatio is cache-read tokens over all input tokens (read,
	// written and uncached), as the provider reported them.
	CacheReadRatio float64 `json:"cache_read_ratio"`
	WallMS         int64   `json:"wall_ms"`
	// ScriptLeft counts the mock's scripted replies not consumed (a
	// script out of step with shepherd when not 0).
	ScriptLeft int      `json:"script_left,omitempty"`
	Errors     []string `json:"errors,omitempty"`
}

// Tokens are request sizes, estimated at 4 bytes a token.
type Tokens struct {
	// Agent sums the agent's requests, Upstream the requests shepherd
	// sent for them.
	Agent    int `json:"agent"`
	Upstream int `json:"upstream"`
	// AddedPerTurn is (Upstream - Agent) / turns: everything shepherd adds
	// to the provider's input per agent request (its tools, guidance and
	// reminders, the ledger's replayed calls, follow-up and continuation
	// requests). InjectedPerTurn counts only the first upstream request
	// of each turn (no extra rounds).
	AddedPerTurn    float64 `json:"added_per_turn"`
	InjectedPerTurn float64 `json:"injected_per_turn"`
}

// Usage sums the provider's usage over the run (request.finished).
type Usage struct {
	Input      int64 `json:"input_tokens"`
	Output     int64 `json:"output_tokens"`
	CacheRead  int64 `json:"cache_read_tokens"`
	CacheWrite int64 `json:"cache_write_tokens"`
}

// Total sums runs.
type Total struct {
	Script         string  `json:"script"`
	API            string  `json:"api"`
	Runs           int     `json:"runs"`
	Chapters       Score   `json:"chapters"`
	Intent         Score   `json:"intent_first"`
	Refusals       Score   `json:"refusals_respected"`
	Continuations  Score   `json:"continuations_seamless"`
	Solved         int     `json:"solved"`
	Turns          int     `json:"turns"`
	Upstream       int     `json:"upstream_requests"`
	AddedPerTurn   float64 `json:"added_per_turn"`
	Usage          Usage   `json:"usage"`
	CacheReadRatio float64 `json:"cache_read_ratio"`
	WallMS         int64   `json:"wall_ms"`
}

// total fills Totals: per script and API in run order, then per script.
func (r *Report) total() {
	r.Totals = nil
	index := map[[2]string]int{}
	add := func(script, api string, run RunReport) {
		k := [2]string{script, api}
		i, ok := index[k]
		if !ok {
			i = len(r.Totals)
			index[k] = i
			r.Totals = append(r.Totals, Total{Script: script, API: api})
		}
		t := &r.Totals[i]
		added := t.AddedPerTurn*float64(t.Turns) + run.Tokens.AddedPerTurn*float64(run.Turns)
		t.Runs++
		t.Chapters = t.Chapters.Add(run.Chapters)
		t.Intent = t.Intent.Add(run.Intent)
		t.Refusals = t.Refusals.Add(run.Refusals)
		t.Continuations = t.Continuations.Add(run.Continuations)
		if run.Solved {
			t.Solved++
		}
		t.Turns += run.Turns
		t.Upstream += run.Upstream
		if t.Turns > 0 {
			t.AddedPerTurn = added / float64(t.Turns)
		}
		t.Usage.Input += run.Usage.Input
		t.Usage.Output += run.Usage.Output
		t.Usage.CacheRead += run.Usage.CacheRead
		t.Usage.CacheWrite += run.Usage.CacheWrite
		if in := t.Usage.Input + t.Usage.CacheRead + t.Usage.CacheWrite; in > 0 {
			t.CacheReadRatio = float64(t.Usage.CacheRead) / float64(in)
		}
		t.WallMS += run.WallMS
	}
	for _, run := range r.Runs {
		add(run.Script, run.API, run)
	}
	for _, run := range r.Runs {
		add(run.Script, "all", run)
	}
}

// Total returns the total of script over api ("all": every API).
func (r *Report) Total(script, api string) (Total, bool) {
	for _, t := range r.Totals {
		if t.Script == script && t.API == api {
			return t, true
		}
	}
	return Total{}, false
}

// JSON is the report as indented JSON.
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("eval: report: %w", err)
	}
	return append(b, '\n'), nil
}

// WriteJSON writes the report to path.
func (r *Report) WriteJSON(path string) error {
	b, err := r.JSON()
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("eval: report: %w", err)
	}
	return nil
}

// Markdown renders the report as two tables: every run, then the totals.
// The heading says where the model ran.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#### Behavioural eval, provider: %s\n\n", r.Provider)
	b.WriteString("| task | api | script | chapters | intent first | refusals respected | continuations seamless | solved | turns | upstream | refused | cont. | prefix breaks | +tokens/turn | cache read | wall |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, run := range r.Runs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %d | %d | %d | %d | %d | %.0f | %.0f%% | %s |\n",
			run.Task, run.API, run.Script, run.Chapters, run.Intent, run.Refusals, run.Continuations, yesNo(run.Solved),
			run.Turns, run.Upstream, run.Refused, run.ContinuationsSent, run.PrefixBreaks, run.Tokens.AddedPerTurn, 100*run.CacheReadRatio,
			wall(run.WallMS))
	}
	b.WriteString("\n| script | api | runs | chapters | intent first | refusals respected | continuations seamless | solved | turns | upstream | +tokens/turn | cache read | wall |\n")
	b.WriteString("|---|---|--:|---|---|---|---|---|--:|--:|--:|--:|--:|\n")
	for _, t := range r.Totals {
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %d/%d | %d | %d | %.0f | %.0f%% | %s |\n",
			t.Script, t.API, t.Runs, t.Chapters, t.Intent, t.Refusals, t.Continuations, t.Solved, t.Runs,
			t.Turns, t.Upstream, t.AddedPerTurn, 100*t.CacheReadRatio, wall(t.WallMS))
	}
	return b.String()
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

func wall(ms int64) string {
	if ms < 1000 {
		return fmt.Sprintf("%d ms", ms)
	}
	return fmt.Sprintf("%.1f s", float64(ms)/1000)
}
