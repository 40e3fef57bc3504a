package eval

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// noKey is an environment with no provider key.
func noKey(string) string { return "" }

// TestMockEveryAPI runs the whole eval on the mock for every API, with no
// key: the compliant script scores full marks on chapters, intent,
// refusals and continuations and solves every task; the careless one
// scores less on each of chapters, intent and refusals; the report says
// it ran on the mock, in the table and the JSON, and the JSON parses.
func TestMockEveryAPI(t *testing.T) {
	p, err := Detect(noKey, "", "", "")
	require.NoError(t, err)
	require.False(t, p.Live)
	rep, err := Run(context.Background(), Options{Provider: p, TempDir: t.TempDir()})
	require.NoError(t, err)
	require.Len(t, rep.Runs, len(Tasks())*len(kit.Drivers())*2)

	for _, r := range rep.Runs {
		name := r.Task + "/" + r.API + "/" + r.Script
		require.Zero(t, r.ScriptLeft, "%s: the script is out of step with shepherd", name)
		require.Positive(t, r.Turns, name)
		require.Greater(t, r.Upstream, r.Turns, "%s: shepherd's follow-ups and continuations are upstream requests of their own", name)
		require.Positive(t, r.Tokens.AddedPerTurn, "%s: shepherd adds its tools and reminders", name)
		require.Positive(t, r.CacheReadRatio, "%s: the mock's prompt cache reads the unchanged prefix", name)
		require.Zero(t, r.PrefixBreaks, "%s: the model's view stays append-only", name)
		require.Equal(t, Score{1, 1}, r.Continuations, "%s: %v", name, r.Errors)
		require.True(t, r.Solved, name)
		switch r.Script {
		case ScriptCompliant:
			require.Empty(t, r.Errors, name)
			require.True(t, r.Chapters.Full(), "%s: chapters %s %v", name, r.Chapters, r.ChapterTitles)
			require.True(t, r.Intent.Full(), "%s: intent %s", name, r.Intent)
			require.Equal(t, Score{1, 1}, r.Refusals, name)
		case ScriptCareless:
			require.False(t, r.Chapters.Full(), "%s: chapters %s", name, r.Chapters)
			require.Equal(t, Score{0, 1}, r.Intent, name)
			require.Equal(t, Score{2, 4}, r.Refusals, name)
		default:
			t.Fatalf("%s: unexpected script", name)
		}
	}
	compliant, ok := rep.Total(ScriptCompliant, "all")
	require.True(t, ok)
	careless, ok := rep.Total(ScriptCareless, "all")
	require.True(t, ok)
	require.Greater(t, careless.AddedPerTurn, compliant.AddedPerTurn, "refusal rounds cost the careless model more")

	md := rep.Markdown()
	require.Contains(t, strings.SplitN(md, "\n", 2)[0], MockNote, "the table's heading says it ran on the mock")
	require.Equal(t, len(rep.Runs)+len(rep.Totals)+7, strings.Count(md, "\n"), md)

	path := filepath.Join(t.TempDir(), "report.json")
	require.NoError(t, rep.WriteJSON(path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, MockNote, back.Provider)
	require.False(t, back.Live)
	require.Equal(t, rep.Runs, back.Runs)
	require.Equal(t, rep.Totals, back.Totals)
}

// TestScoresDropWithFeaturesOff: the compliant script loses the score of
// the feature that is switched off, so the scores measure shepherd.
func TestScoresDropWithFeaturesOff(t *testing.T) {
	task, _ := TaskNamed("fix-add")
	run := func(t *testing.T, configure func(*config.Config)) RunReport {
		rep, err := Run(context.Background(), Options{APIs: []string{"anthropic"}, Scripts: []string{ScriptCompliant},
			Tasks: []*Task{task}, TempDir: t.TempDir(), Configure: configure})
		require.NoError(t, err)
		require.Len(t, rep.Runs, 1)
		return rep.Runs[0]
	}
	t.Run("topics", func(t *testing.T) {
		r := run(t, func(c *config.Config) { c.Topics.Enabled = false })
		require.Equal(t, Score{0, 3}, r.Chapters)
		require.Empty(t, r.ChapterTitles)
	})
	t.Run("intents", func(t *testing.T) {
		r := run(t, func(c *config.Config) { c.Intents.Enabled = config.SwitchOff })
		require.Equal(t, Score{0, 1}, r.Intent, "select_active_intent reached the agent, which does not know it")
		require.Equal(t, Score{}, r.Refusals, "nothing was refused")
	})
	t.Run("recovery", func(t *testing.T) {
		r := run(t, func(c *config.Config) { c.Recovery.Enabled = false })
		require.Equal(t, Score{0, 1}, r.Continuations)
		require.Zero(t, r.ContinuationsSent)
		require.Equal(t, 1, r.ScriptLeft, "the continuation's reply was never asked for")
	})
}

// TestLivePlumbing runs a live-mode eval against a stand-in provider (the
// mock, answering text): the key travels in each API's credential header,
// the report names the API and model, and nothing is scored as the
// mock's.
func TestLivePlumbing(t *testing.T) {
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			m := kit.StartMock(t, mock.Options{Default: mock.Reply{Text: "All done."}})
			p := Provider{Live: true, API: d.Name(), Key: "sk-live-key", BaseURL: m.URL(), Model: d.DefaultModel()}
			task, _ := TaskNamed("fix-add")
			rep, err := Run(context.Background(), Options{Provider: p, Tasks: []*Task{task}, TempDir: t.TempDir()})
			require.NoError(t, err)
			require.True(t, rep.Live)
			require.NotContains(t, rep.Provider, "mock")
			require.Contains(t, rep.Provider, d.Name())
			require.Len(t, rep.Runs, 1)
			r := rep.Runs[0]
			require.Equal(t, ScriptLive, r.Script)
			require.Equal(t, 2, r.Turns, "one request per prompt: the model called no tool")
			require.Empty(t, r.Errors)
			reqs := m.Requests()
			require.Len(t, reqs, 2)
			found := false
			for _, vs := range reqs[0].Header {
				for _, v := range vs {
					found = found || strings.Contains(v, "sk-live-key")
				}
			}
			require.True(t, found, "the key reaches the provider: %v", reqs[0].Header)
			b, err := rep.JSON()
			require.NoError(t, err)
			require.NotContains(t, string(b), "sk-live-key", "the report never holds the key")
		})
	}
}

// TestLive runs the eval against the real provider whose key is set; it
// is skipped without one.
func TestLive(t *testing.T) {
	p, err := Detect(os.Getenv, os.Getenv("EVAL_API"), os.Getenv("EVAL_MODEL"), "")
	require.NoError(t, err)
	if !p.Live {
		t.Skip("no ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY set: the live eval needs a provider key")
	}
	if testing.Short() {
		t.Skip("the live eval calls a real model: not in -short")
	}
	rep, err := Run(context.Background(), Options{Provider: p, TempDir: t.TempDir()})
	require.NoError(t, err)
	require.True(t, rep.Live)
	for _, r := range rep.Runs {
		require.Positive(t, r.Turns, r.Task)
		t.Logf("%s: chapters %s intent %s refusals %s continuations %s solved %v errors %v",
			r.Task, r.Chapters, r.Intent, r.Refusals, r.Continuations, r.Solved, r.Errors)
	}
	t.Log("\n" + rep.Markdown())
}
