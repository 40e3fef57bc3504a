package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// DefaultStepCap is the most agent requests of one user turn.
const DefaultStepCap = 12

// Options configure Run.
type Options struct {
	// Provider is where the model runs (Detect); the zero value is the
	// mock.
	Provider Provider
	// APIs are the wire APIs a mock run speaks (default: all four); a
	// live run speaks Provider.API.
	APIs []string
	// Scripts are the mock's models to run (default compliant, careless);
	// a live run has one, the model.
	Scripts []string
	// Tasks to run (default Tasks()).
	Tasks []*Task
	// StepCap bounds the agent requests of one user turn (default
	// DefaultStepCap).
	StepCap int
	// TempDir holds the workspaces (default os.TempDir()).
	TempDir string
	// Log is shepherd's logger (nil: none).
	Log *zap.Logger
	// Progress gets a line per finished run (nil: none).
	Progress io.Writer
	// Configure, when set, changes shepherd's configuration of every run
	// after the eval's (evalConfig) and before it is validated: to see a
	// score drop with a feature off.
	Configure func(*config.Config)
}

// Run runs every task on every API and script of o and reports the
// scores. A run that fails (shepherd, the provider or the agent) is
// reported with its error and scored on what it did; Run fails only when
// it cannot start one.
func Run(ctx context.Context, o Options) (*Report, error) {
	if len(o.Tasks) == 0 {
		o.Tasks = Tasks()
	}
	if o.StepCap <= 0 {
		o.StepCap = DefaultStepCap
	}
	apis, scripts := o.APIs, o.Scripts
	if o.Provider.Live {
		apis, scripts = []string{o.Provider.API}, []string{ScriptLive}
	} else {
		if len(apis) == 0 {
			for _, d := range kit.Drivers() {
				apis = append(apis, d.Name())
			}
		}
		if len(scripts) == 0 {
			scripts = []string{ScriptCompliant, ScriptCareless}
		}
	}
	rep := &Report{Provider: o.Provider.Describe(), Live: o.Provider.Live, Started: time.Now().UTC()}
	if o.Provider.Live {
		rep.Model = o.Provider.Model
	}
	for _, task := range o.Tasks {
		for _, api := range apis {
			for _, script := range scripts {
				r, err := runOne(ctx, o, task, api, script)
				if err != nil {
					return nil, err
				}
				rep.Runs = append(rep.Runs, r)
				if o.Progress != nil {
					fmt.Fprintf(o.Progress, "eval: %s %s %s: chapters %s, intent %s, refusals %s, continuations %s (%s)\n",
						task.Name, api, script, r.Chapters, r.Intent, r.Refusals, r.Continuations, time.Duration(r.WallMS)*time.Millisecond)
				}
			}
		}
	}
	rep.total()
	return rep, nil
}

// runOne runs task on api with script (the mock's) or the live model:
// a fresh workspace, upstream, tap and shepherd for each run.
func runOne(ctx context.Context, o Options, task *Task, api, script string) (RunReport, error) {
	d, ok := kit.Lookup(api)
	if !ok {
		return RunReport{}, fmt.Errorf("eval: unknown API %q", api)
	}
	ws, err := NewWorkspace(o.TempDir, task)
	if err != nil {
		return RunReport{}, err
	}
	defer func() { _ = ws.Remove() }()

	upstream, model, headers := o.Provider.BaseURL, o.Provider.Model, credentials(d, o.Provider.Key)
	var m *mock.Server
	if !o.Provider.Live {
		replies, ok := task.Scripts[script]
		if !ok {
			return RunReport{}, fmt.Errorf("eval: task %s has no script %q", task.Name, script)
		}
		m = mock.New(mock.Options{PromptCache: true})
		if err := m.Start(); err != nil {
			return RunReport{}, fmt.Errorf("eval: mock provider: %w", err)
		}
		defer m.Close()
		m.Script(replies...)
		upstream, model, headers = m.URL(), d.DefaultModel(), d.Headers()
	}
	tp, err := startTap(upstream)
	if err != nil {
		return RunReport{}, err
	}
	defer tp.Close()
	cfg := evalConfig(tp.URL(), ws)
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	sh, err := startShepherd(cfg, o.Log)
	if err != nil {
		return RunReport{}, err
	}
	defer sh.Close()

	headers["X-Session-Id"] = fmt.Sprintf("eval-%s-%s-%s-%d", task.Name, api, script, time.Now().UnixNano())
	a := &agent{d: d, url: sh.URL, headers: headers, ws: ws, tap: tp,
		req:    kit.Request{Model: model, System: SystemPrompt, Tools: Tools},
		client: &http.Client{Timeout: 5 * time.Minute}}
	start := time.Now()
	exchanges, runErr := converse(ctx, a, task, o.StepCap)
	wall := time.Since(start)
	waitFinished(sh.Events, len(exchanges))

	var expected []string
	if !o.Provider.Live {
		expected = task.Expected[script]
	}
	r := score(task, d, script, exchanges, sh.Events.All(), expected)
	r.Model, r.WallMS = model, wall.Milliseconds()
	r.Solved, _ = task.Check(ws)
	if runErr != nil {
		r.Errors = append(r.Errors, runErr.Error())
	}
	if m != nil {
		r.ScriptLeft = m.Pending()
	}
	return r, nil
}

// converse sends the task's prompts and runs the tool loop of each until
// the model answers without tool calls or StepCap requests were sent. It
// stops at the first failed exchange.
func converse(ctx context.Context, a *agent, task *Task, stepCap int) ([]Exchange, error) {
	var out []Exchange
	for i, p := range task.Prompts {
		a.history = append(a.history, a.d.User(p.Text))
		for step := 0; ; step++ {
			if step == stepCap {
				return out, fmt.Errorf("prompt %d: step cap %d reached", i+1, stepCap)
			}
			ex := a.send(ctx, i, p.Limit)
			out = append(out, ex)
			if ex.Err != "" {
				return out, fmt.Errorf("prompt %d, request %d: %s", i+1, step+1, ex.Err)
			}
			if len(ex.Reply.Calls) == 0 {
				break
			}
			a.results(ex.Reply)
		}
		if err := ctx.Err(); err != nil {
			return out, errors.Join(errors.New("interrupted"), err)
		}
	}
	return out, nil
}

// waitFinished waits (up to two seconds) until the feed reported
// request.finished for n requests: it is emitted once the reply was
// written, which the agent may have read first.
func waitFinished(r *events.Recorder, n int) {
	deadline := time.Now().Add(2 * time.Second)
	for len(r.Of(events.RequestFinished)) < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// score reads one run's exchanges and feed into its report.
// expected are the whole texts of the script's cut replies (nil live).
func score(task *Task, d kit.Driver, script string, exchanges []Exchange, evs []events.Event, expected []string) RunReport {
	r := RunReport{Task: task.Name, API: d.Name(), Script: script, UserTurns: len(task.Prompts), ChapterTitles: []string{}}
	for _, e := range evs {
		switch e.Type {
		case events.ChapterOpened:
			title, _ := e.Data["title"].(string)
			r.ChapterTitles = append(r.ChapterTitles, title)
		case events.IntentSelected:
			if starting, _ := e.Data["starting"].(bool); !starting {
				r.IntentsSelected++
			}
		case events.CallRefused:
			r.Refused++
		case events.Continuation:
			r.ContinuationsSent++
		case events.RequestFinished:
			u, _ := e.Data["usage"].(map[string]any)
			r.Usage.Input += number(u["input_tokens"])
			r.Usage.Output += number(u["output_tokens"])
			r.Usage.CacheRead += number(u["cache_read_tokens"])
			r.Usage.CacheWrite += number(u["cache_write_tokens"])
		}
	}
	r.Chapters, r.ChapterPhases = scoreChapters(task.Phases, r.ChapterTitles)
	calls := modelCalls(d, exchanges, evs)
	r.Intent = scoreIntent(calls)
	r.Refusals = scoreRefusals(calls)
	r.Continuations = scoreContinuations(checkContinuations(d, exchanges, expected), &r)

	r.Turns = len(exchanges)
	r.PrefixBreaks = prefixBreaks(d, exchanges)
	var added, injected int
	for _, ex := range exchanges {
		r.Upstream += len(ex.Upstream)
		agentTok := tokensOf(ex.Body)
		r.Tokens.Agent += agentTok
		for i, u := range ex.Upstream {
			r.Tokens.Upstream += tokensOf(u.Request)
			if i == 0 {
				injected += tokensOf(u.Request) - agentTok
			}
		}
		if len(ex.Upstream) > 0 {
			added += sumTokens(ex.Upstream) - agentTok
		}
	}
	if r.Turns > 0 {
		r.Tokens.AddedPerTurn = float64(added) / float64(r.Turns)
		r.Tokens.InjectedPerTurn = float64(injected) / float64(r.Turns)
	}
	if in := r.Usage.Input + r.Usage.CacheRead + r.Usage.CacheWrite; in > 0 {
		r.CacheReadRatio = float64(r.Usage.CacheRead) / float64(in)
	}
	return r
}

// scoreContinuations turns the continuation checks into a score, noting
// what was wrong in r.Errors.
func scoreContinuations(cs []continued, r *RunReport) Score {
	var s Score
	for _, c := range cs {
		s.Of++
		if c.Seamless {
			s.Got++
		} else {
			r.Errors = append(r.Errors, "continuation: "+c.Why)
		}
	}
	return s
}

func sumTokens(us []Upstream) int {
	n := 0
	for _, u := range us {
		n += tokensOf(u.Request)
	}
	return n
}

// prefixBreaks counts the upstream requests whose conversation does not
// extend the previous one's byte for byte (kit.PrefixBreak), the moving
// cache breakpoint aside: each one is a prompt-cache miss from there on.
func prefixBreaks(d kit.Driver, exchanges []Exchange) int {
	var prev []byte
	n := 0
	for _, ex := range exchanges {
		for _, u := range ex.Upstream {
			cur := u.Request
			if explicitCache[d.Name()] {
				cur = withoutBreakpoints(cur)
			}
			if prev != nil && kit.PrefixBreak(d, prev, cur) >= 0 {
				n++
			}
			prev = cur
		}
	}
	return n
}
