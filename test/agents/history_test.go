package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// injectedTools are the tools shepherd adds to the agent's requests.
var injectedTools = []string{"create_new_topic", "select_active_intent"}

// reminderPrefixes begin the per-turn reminders shepherd appends to the
// newest user message (topics, intents).
var reminderPrefixes = []string{"[Active Topic:", "[Active Intent:"}

// (f) What the provider receives over a two-turn run with topics and
// intents on (the model writes a file in scope, then answers): the second
// turn's history extends the first's, item by item as canonical JSON. That
// includes the reminders shepherd appended to the first turn's last user
// message: the agent resends its history without them and shepherd puts
// them back where the model saw them, so the provider's prompt cache keeps
// hitting. The agent's side requests (checks in JSON mode, no tools of its
// own) reach the provider without shepherd's tools.
func TestAgentHistoryAppendOnly(t *testing.T) {
	forEach(t, func(t *testing.T, d driver) {
		d = withSideRequests(d)
		s := newStack(t, d, stackOptions{Topics: true, Policy: agentPolicy})
		target := filepath.Join(s.Workdir, "src", "hello.txt")
		var turns atomic.Int32
		s.script(func(req mock.Recorded, main bool) mock.Reply {
			if !main {
				return mock.Reply{Text: `{"reasoning":"The answer is complete.","next_speaker":"user"}`}
			}
			if turns.Add(1) == 1 {
				return mock.Reply{ToolCalls: []mock.ToolCall{d.writeCall(target, "hello")}}
			}
			return mock.Reply{Text: "HISTORY-DONE-52"}
		})
		res := mustRun(t, d, s, "Write src/hello.txt.")
		require.Contains(t, res.Answer, "HISTORY-DONE-52")
		require.FileExists(t, target, "the in-scope write ran")

		mains := s.mainRequests(d)
		require.GreaterOrEqual(t, len(mains), 2, "the tool-call turn and the turn after it")
		path := wire(d).HistoryPath()
		h1 := gjson.GetBytes(mains[0].Body, path).Array()
		h2 := gjson.GetBytes(mains[1].Body, path).Array()
		require.NotEmpty(t, h1)
		require.Greater(t, len(h2), len(h1), "the second turn adds the tool call and its result")
		last := lastUser(h1)
		for i := range h1 {
			a, b := canonical(t, h1[i].Raw), canonical(t, h2[i].Raw)
			require.Equal(t, a, b, "history item %d of the second request differs from the first's", i)
		}
		for _, name := range injectedTools {
			require.Contains(t, wire(d).DeclaredTools(mains[0].Body), name, "shepherd offers %s on agent turns", name)
		}
		for _, p := range reminderPrefixes {
			require.Contains(t, h1[last].Raw, p, "shepherd's reminder is on the first turn's last user message, and stays there on the second")
		}

		side := 0
		for _, r := range s.mock.Requests() {
			if r.API == "" || r.API == "models" || isMainTurn(d, r) {
				continue
			}
			side++
			t.Logf("side request %s %s tools=%v", r.API, r.Path, toolNames(r.Body))
			for _, name := range injectedTools {
				require.NotContains(t, toolNames(r.Body), name, "side request %s %s got shepherd's tool", r.API, r.Path)
				require.NotContains(t, string(r.Body), name, "side request %s %s mentions shepherd's tool", r.API, r.Path)
			}
		}
		t.Logf("%s: %d main requests, %d side requests", d.name(), len(mains), side)
		if _, ok := d.(geminiNextSpeaker); ok {
			require.Positive(t, side, "gemini-cli's next-speaker check (JSON mode, no tools) reached the provider")
		}
	})
}

// lastUser is the index of the last user message of history, -1 if none.
func lastUser(history []gjson.Result) int {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Get("role").String() == "user" {
			return i
		}
	}
	return -1
}

// canonical re-encodes one history item with sorted keys and without
// Anthropic cache breakpoints (cache_control): Claude Code marks its newest
// message with one, so the marker moves every turn; it is a caching hint,
// not part of what the model reads.
func canonical(t *testing.T, raw string) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(raw), &v), raw)
	dropCacheControl(v)
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// dropCacheControl removes every cache_control key from v, in place.
func dropCacheControl(v any) {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "cache_control")
		for _, e := range x {
			dropCacheControl(e)
		}
	case []any:
		for _, e := range x {
			dropCacheControl(e)
		}
	}
}

// geminiNextSpeaker is gemini-cli with its next-speaker check on
// (model.skipNextSpeakerCheck false): after a turn that ends in text it asks
// the model, in JSON mode and without tools, who speaks next. None of the
// other CLIs sends a side request in a headless run.
type geminiNextSpeaker struct{ geminiCLI }

func (geminiNextSpeaker) setup(t *testing.T, r *run) []string {
	env := geminiCLI{}.setup(t, r)
	p := filepath.Join(r.Home, ".gemini", "settings.json")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b, err = sjson.SetBytes(b, "model.skipNextSpeakerCheck", false)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return env
}

// withSideRequests is d set up to make the side requests it can make.
func withSideRequests(d driver) driver {
	if g, ok := d.(geminiCLI); ok {
		return geminiNextSpeaker{g}
	}
	return d
}
