package bench_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/proxy"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// The scripted session of the compaction measurement: cacheTurns tool-loop
// rounds, each a Read whose result is cacheResultChars characters, then a
// closing answer; compaction, when on, with the defaults except its
// trigger: each of cacheTriggers (the default, 50,000 tokens, reached once
// in the session; and 20,000, reached every few rounds).
const (
	cacheTurns       = 40
	cacheResultChars = 8000
)

var cacheTriggers = []int{50000, 20000}

// cacheRun is what one session cost, summed over its requests, as the
// agent read the replies' usage.
type cacheRun struct {
	api string
	// trigger is compaction.trigger_tokens, 0 with compaction off.
	trigger int
	// input is every input token (uncached, read and written); read and
	// write the cache's part.
	input, read, write int64
	epochs             int
	// reads are the cache reads per request, breaks whether each request
	// broke the upstream view's prefix (kit.PrefixBreak), request 0
	// excluded from both (reads[0] is request 1's).
	reads  []int64
	breaks []bool
}

func (r cacheRun) ratio() float64 { return float64(r.read) / float64(max(r.input, 1)) }

// cost is the input in uncached-token equivalents: Anthropic bills a cache
// write at 1.25 and a read at 0.1 of an input token; OpenAI (gpt-4o) a
// cached token at 0.5.
func (r cacheRun) cost() float64 {
	if r.api == "anthropic" {
		return float64(r.input-r.read-r.write) + 1.25*float64(r.write) + 0.1*float64(r.read)
	}
	return float64(r.input-r.read) + 0.5*float64(r.read)
}

// TestCompactionCache measures what compaction does to the prompt cache:
// the same scripted 40-round session through the real proxy against the
// mock provider modelling prompt caching, with compaction off and on, on
// Anthropic (explicit breakpoints, as Claude Code places them: on the last
// block of the newest message) and OpenAI Chat (automatic prefix caching).
// It asserts only what must hold: compaction sends fewer input tokens,
// breaks the upstream prefix exactly once per epoch, and between epochs
// every request reads the cache. The table (go test -v, or the file
// COMPACTION_CACHE_OUT names) is in bench/README.md.
func TestCompactionCache(t *testing.T) {
	var rows []cacheRun
	for _, api := range []string{"anthropic", "openai_chat"} {
		d, ok := kit.Lookup(api)
		if !ok {
			t.Fatalf("no driver %s", api)
		}
		off := runCacheSession(t, d, 0)
		rows = append(rows, off)
		if off.epochs != 0 {
			t.Fatalf("%s: %d epochs with compaction off", api, off.epochs)
		}
		runs := []cacheRun{off}
		for _, trigger := range cacheTriggers {
			on := runCacheSession(t, d, trigger)
			rows = append(rows, on)
			runs = append(runs, on)
			if on.epochs == 0 {
				t.Fatalf("%s trigger %d: no epoch", api, trigger)
			}
			if on.input >= off.input {
				t.Errorf("%s trigger %d: compaction sent %d input tokens, not fewer than without (%d)", api, trigger, on.input, off.input)
			}
		}
		for _, run := range runs {
			breaks := 0
			for i, brk := range run.breaks {
				if brk {
					breaks++
					continue
				}
				// Request 1 follows one too small to cache (1,024 tokens).
				if i > 0 && run.reads[i] == 0 {
					t.Errorf("%s trigger %d: request %d extends the one before but read nothing from the cache", api, run.trigger, i+1)
				}
			}
			if breaks != run.epochs {
				t.Errorf("%s trigger %d: %d prefix breaks, %d epochs", api, run.trigger, breaks, run.epochs)
			}
		}
	}
	table := cacheTable(rows)
	t.Log("\n" + table)
	if out := os.Getenv("COMPACTION_CACHE_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cacheTable renders the runs as a Markdown table.
func cacheTable(rows []cacheRun) string {
	var b strings.Builder
	b.WriteString("| API | compaction | epochs (at requests) | input tokens | cache read | cache write | cache-read ratio | input cost (uncached-token equivalents) |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		mode := "off"
		if r.trigger > 0 {
			mode = fmt.Sprintf("on, trigger %d", r.trigger)
		}
		var at []string
		for i, brk := range r.breaks {
			if brk {
				at = append(at, fmt.Sprint(i+1))
			}
		}
		epochs := fmt.Sprint(r.epochs)
		if len(at) > 0 {
			epochs += " (" + strings.Join(at, ", ") + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d | %.1f %% | %.0f |\n",
			r.api, mode, epochs, r.input, r.read, r.write, 100*r.ratio(), r.cost())
	}
	return b.String()
}

// runCacheSession runs the scripted session on d through a fresh proxy and
// mock (prompt caching on), with compaction on at trigger (off for 0), and
// sums the usage the agent reads.
func runCacheSession(t *testing.T, d kit.Driver, trigger int) cacheRun {
	t.Helper()
	m := kit.StartMock(t, mock.Options{PromptCache: true})
	cfg := config.Defaults()
	cfg.Listen = "127.0.0.1:0"
	cfg.Admin.Listen = ""
	cfg.Upstreams.Anthropic, cfg.Upstreams.OpenAI, cfg.Upstreams.Gemini = m.URL(), m.URL(), m.URL()
	cfg.Log.Level = "warn"
	cfg.Intents.Enabled = config.SwitchOff
	if trigger > 0 {
		cfg.Compaction.Enabled = hooks.OptInOn
		cfg.Compaction.TriggerTokens = trigger
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	metrics := proxy.NewMetrics()
	features, err := proxy.BuildFeatures(&cfg, metrics, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	st := state.NewMemory(state.MemoryOptions{MaxSessions: 100, TTL: cfg.State.TTL})
	srv, err := proxy.New(proxy.Options{Config: &cfg, Logger: zap.NewNop(), Store: st, Metrics: metrics, Features: features})
	if err != nil {
		t.Fatal(err)
	}
	url := kit.Serve(t, srv, func() { _ = features.Close() }, func() { _ = st.Close() })

	run := cacheRun{api: d.Name(), trigger: trigger}
	a := kit.NewAgent(d, url, map[string]string{"X-Session-Id": fmt.Sprintf("cache-%s-%d", d.Name(), trigger)})
	a.User("Why does Handle17Request in src/pkg17/file.go fail? Read the files and tell me.")
	for i := range cacheTurns + 1 {
		rep := mock.Reply{ID: fmt.Sprintf("msg_%02d", i), ToolCalls: []mock.ToolCall{{
			ID: fmt.Sprintf("call_%02d", i), Name: "Read", Args: fmt.Sprintf(`{"path":"src/pkg%d/file.go"}`, i),
		}}}
		if i == cacheTurns {
			rep = mock.Reply{ID: fmt.Sprintf("msg_%02d", i), Text: "It returns step errors unwrapped."}
		}
		m.Script(rep)
		resp, body := kit.Do(t, "POST", url+d.Path("", false), withBreakpoint(d, a.Body()), headers(d, a.Header))
		if resp.StatusCode != 200 {
			t.Fatalf("%s request %d: status %d: %.300s", d.Name(), i, resp.StatusCode, body)
		}
		in, read, write := usageOf(d, body)
		run.input += in
		run.read += read
		run.write += write
		if i > 0 {
			run.reads = append(run.reads, read)
		}
		a.History = append(a.History, d.Echo(body)...)
		if i < cacheTurns {
			a.ToolResult(rep.ToolCalls[0].ID, "Read", cacheResult(i))
		}
	}
	reqs := m.Requests()
	for i := 1; i < len(reqs); i++ {
		prev, next := unmarked(reqs[i-1].Body), unmarked(reqs[i].Body)
		run.breaks = append(run.breaks, kit.PrefixBreak(d, prev, next) != -1)
	}
	run.epochs = int(kit.Metrics(t, url+"/metrics").Sum("shepherd_compaction_epochs_total"))
	return run
}

// headers are d's credentials and extra.
func headers(d kit.Driver, extra map[string]string) map[string]string {
	h := d.Headers()
	for k, v := range extra {
		h[k] = v
	}
	return h
}

// cacheResult is the result of round i: a file listing of its own.
func cacheResult(i int) string {
	var b strings.Builder
	for n := 0; b.Len() < cacheResultChars; n++ {
		fmt.Fprintf(&b, "src/pkg%d/file.go:%d: func Handle%dRequest(ctx context.Context) error { return step%d(ctx) }\n", i, n, i, n)
	}
	return b.String()[:cacheResultChars]
}

// withBreakpoint marks, on Anthropic, the last block of the newest message
// as a cache breakpoint, as Claude Code does on every request (a string
// content becomes one text block); other APIs cache automatically.
func withBreakpoint(d kit.Driver, body string) string {
	if d.Name() != "anthropic" {
		return body
	}
	msgs := gjson.Get(body, "messages").Array()
	last := len(msgs) - 1
	content := msgs[last].Get("content")
	var err error
	if content.Type == gjson.String {
		body, err = sjson.SetRaw(body, fmt.Sprintf("messages.%d.content", last),
			`[{"type":"text","text":`+kit.Quote(content.Str)+breakpoint+`}]`)
	} else {
		body, err = sjson.SetRaw(body, fmt.Sprintf("messages.%d.content.%d.cache_control", last, len(content.Array())-1), breakpoint[len(`,"cache_control":`):])
	}
	if err != nil {
		panic(err)
	}
	return body
}

// breakpoint is the cache_control member withBreakpoint adds.
const breakpoint = `,"cache_control":{"type":"ephemeral"}`

// unmarked is body without the breakpoints withBreakpoint added: they move
// from request to request and are not part of the prompt.
func unmarked(body []byte) []byte {
	return []byte(strings.ReplaceAll(string(body), breakpoint, ""))
}

// usageOf reads a reply's input tokens (all of them), cache reads and
// cache writes.
func usageOf(d kit.Driver, body []byte) (input, read, write int64) {
	u := gjson.GetBytes(body, "usage")
	if d.Name() == "anthropic" {
		read, write = u.Get("cache_read_input_tokens").Int(), u.Get("cache_creation_input_tokens").Int()
		return u.Get("input_tokens").Int() + read + write, read, write
	}
	return u.Get("prompt_tokens").Int(), u.Get("prompt_tokens_details.cached_tokens").Int(), 0
}
