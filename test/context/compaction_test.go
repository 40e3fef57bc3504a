package context_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// compactionMark is the start of the default note of a compacted result.
const compactionMark = "[shepherd compacted this tool result"

// compactionRounds and compactionResultChars shape the tool-loop session:
// 12 rounds of one Read each, every result 6,000 characters.
const (
	compactionRounds      = 12
	compactionResultChars = 6000
)

// compactionOn turns compaction on (or on header) with a low trigger: 8,000
// tokens (32,000 characters), so a 6,000-character result a round starts
// an epoch every few rounds (at requests 6, 9 and 12: each epoch compacts
// every result but the 2 newest, which leaves the next trigger three rounds
// away).
func compactionOn(enabled hooks.OptIn) func(*config.Config) {
	return func(c *config.Config) {
		c.Compaction.Enabled = enabled
		c.Compaction.TriggerTokens = 8000
		c.Compaction.ItemChars = 1000
		c.Compaction.TotalChars = 2500
		c.Compaction.KeepRecent = 2
	}
}

// compactionResult is the agent's result of round i: a file listing of its
// own.
func compactionResult(i int) string {
	var b strings.Builder
	for n := 0; b.Len() < compactionResultChars; n++ {
		fmt.Fprintf(&b, "src/pkg%d/file.go:%d: func Handle%dRequest(ctx context.Context) error { return step%d(ctx) }\n", i, n, i, n)
	}
	return b.String()[:compactionResultChars]
}

// compactionReply is the model's reply of round i: one Read call (ids explicit,
// so a second mock renders the same reply byte for byte).
func compactionReply(i int) mock.Reply {
	return mock.Reply{ID: fmt.Sprintf("msg_loop%02d", i), ToolCalls: []mock.ToolCall{{
		ID: fmt.Sprintf("call_%02d", i), Name: "Read", Args: fmt.Sprintf(`{"path":"src/pkg%d/file.go"}`, i),
	}}}
}

// compactionLoop runs a session of rounds tool-loop rounds and a closing text
// reply on agent a through r's proxy: every request's reply is checked as
// the agent reads it (the model's call, unchanged), echoed into the
// history and answered with the round's big result. A streamed reply is
// echoed as the same reply rendered as JSON by echo (a second mock), the
// history an SDK would build. It returns the bodies the agent sent.
func compactionLoop(t *testing.T, r *rig, echo *mock.Server, a *kit.Agent, rounds int) []string {
	t.Helper()
	d := a.D
	a.User("Why does Handle7Request in src/pkg7/file.go fail? Read the files and tell me.")
	var sent []string
	for i := range rounds + 1 {
		rep := compactionReply(i)
		if i == rounds {
			rep = mock.Reply{ID: fmt.Sprintf("msg_loop%02d", i), Text: "Handle7Request returns step errors unwrapped."}
		}
		r.Mock.Script(rep)
		sent = append(sent, a.Body())
		resp, body := a.Post(t)
		require.Equal(t, 200, resp.StatusCode, "request %d: %s", i, body)
		var got kit.Reply
		var err error
		if a.Request.Stream {
			got, err = d.ParseStream(body)
			require.NoError(t, err)
			echo.Script(rep)
			er, eb := kit.Do(t, "POST", echo.URL()+d.Path("", false), d.Request(kit.Request{History: []string{d.User("echo")}}), d.Headers())
			require.Equal(t, 200, er.StatusCode, string(eb))
			a.History = append(a.History, d.Echo(eb)...)
		} else {
			got, err = d.ParseReply(body)
			require.NoError(t, err)
		}
		if i == rounds {
			require.Equal(t, rep.Text, got.Text)
			break
		}
		require.Len(t, got.Calls, 1, "request %d", i)
		c := got.Calls[0]
		require.Equal(t, rep.ToolCalls[0].Name, c.Name)
		require.JSONEq(t, rep.ToolCalls[0].Args, c.Args, "the agent gets the model's call unchanged")
		id := c.ID
		if id == "" {
			id = rep.ToolCalls[0].ID
		}
		a.ToolResult(id, c.Name, compactionResult(i))
	}
	return sent
}

// TestCompactionEpochs: on every API, streamed and not, a 12-round tool
// loop with big results compacts in epochs: the upstream view stays
// append-only between epochs and breaks exactly at each epoch's request,
// at the first result it compacts; a compacted result is byte-identical in
// every later upstream body; the agent's own requests keep every result in
// full.
func TestCompactionEpochs(t *testing.T) {
	for _, d := range kit.Drivers() {
		for _, stream := range []bool{false, true} {
			name := d.Name() + map[bool]string{false: "/json", true: "/stream"}[stream]
			t.Run(name, func(t *testing.T) {
				r := newRig(t, rigOptions{Configure: compactionOn(hooks.OptInOn)})
				echo := kit.StartMock(t, mock.Options{})
				a := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": "compaction-" + d.Name()})
				a.Request.Stream = stream
				requireEpochs(t, r, d, compactionLoop(t, r, echo, a, compactionRounds))
			})
		}
	}
}

// requireEpochs checks a compacted session's upstream bodies against what
// the agent sent: several epochs; the view breaks exactly at each epoch's
// request, at a compacted result, and extends the previous request
// otherwise; a compacted result is byte-identical in every later body; the
// agent's own requests keep every result in full; the event and metrics
// agree.
func requireEpochs(t *testing.T, r *rig, d kit.Driver, sent []string) {
	t.Helper()
	bodies := r.upstreamBodies()
	require.Len(t, bodies, compactionRounds+1, "one upstream request per agent request")
	epochs := r.Events.Of(events.ContextCompacted)
	require.GreaterOrEqual(t, len(epochs), 2, "the session runs through several epochs")

	firstSeen := map[string]string{} // call id -> compacted content, as first sent
	breaks := 0
	for i, body := range bodies {
		fresh := 0
		for _, it := range d.ToolHistory(body) {
			if it.Call {
				continue
			}
			if !strings.Contains(it.Content, compactionMark) {
				require.NotContains(t, firstSeen, it.ID, "request %d: a compacted result stays compacted", i)
				continue
			}
			if prev, ok := firstSeen[it.ID]; ok {
				require.Equal(t, prev, it.Content, "request %d: result %s is byte-identical to its first compacted form", i, it.ID)
				continue
			}
			firstSeen[it.ID] = it.Content
			fresh++
		}
		if i == 0 {
			continue
		}
		brk := kit.PrefixBreak(d, bodies[i-1], body)
		if fresh == 0 {
			require.Equal(t, -1, brk, "request %d extends request %d (no epoch)", i, i-1)
			continue
		}
		breaks++
		require.NotEqual(t, -1, brk, "request %d starts an epoch", i)
		hist := gjson.GetBytes(body, d.HistoryPath()).Array()
		require.True(t, strings.Contains(hist[brk].Raw, compactionMark), "request %d breaks at its first compacted result", i)
	}
	require.Equal(t, len(epochs), breaks, "the view breaks once per epoch")
	require.NotEmpty(t, firstSeen)

	// The agent's own requests carry every result in full.
	for i, s := range sent {
		for _, it := range d.ToolHistory([]byte(s)) {
			if !it.Call {
				require.NotContains(t, it.Content, compactionMark, "agent request %d", i)
				require.Equal(t, compactionResultChars, len(it.Content), "agent request %d", i)
			}
		}
	}

	ev := epochs[0]
	require.Equal(t, 1, ev.Data["epoch"])
	require.Positive(t, ev.Data["results"])
	require.Positive(t, ev.Data["omitted_chars"])
	require.Less(t, ev.Data["estimated_tokens_after"], ev.Data["estimated_tokens_before"])
	require.Greater(t, ev.Data["estimated_tokens_before"], 8000)
	m := r.metrics(t)
	require.Equal(t, float64(len(epochs)), m.Sum("shepherd_compaction_epochs_total"))
	require.Positive(t, m.Sum("shepherd_compaction_chars_omitted_total"))
}

// TestCompactionOnRedis: the epochs' slot round-trips through Redis (the
// store that serialises sessions): the replayed texts stay byte-identical.
func TestCompactionOnRedis(t *testing.T) {
	url := kit.RedisURL(t)
	st, err := state.NewRedis(state.RedisOptions{URL: url, KeyPrefix: fmt.Sprintf("compaction-test-%d", time.Now().UnixNano()),
		TTL: time.Minute, Timeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	d := kit.Drivers()[0]
	r := newRig(t, rigOptions{Store: st, Configure: compactionOn(hooks.OptInOn)})
	a := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": "compaction-redis"})
	requireEpochs(t, r, d, compactionLoop(t, r, nil, a, compactionRounds))
}

// TestCompactionHeader: with enabled header, only the session whose
// requests name the feature is compacted.
func TestCompactionHeader(t *testing.T) {
	d := kit.Drivers()[0]
	r := newRig(t, rigOptions{Configure: compactionOn(hooks.OptInHeader)})
	echo := kit.StartMock(t, mock.Options{})

	plain := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": "plain"})
	compactionLoop(t, r, echo, plain, 8)
	require.Empty(t, r.Events.Of(events.ContextCompacted), "no header: no compaction")
	for i, b := range r.upstreamBodies() {
		require.False(t, strings.Contains(string(b), compactionMark), "request %d", i)
	}

	opted := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": "opted", hooks.FeaturesHeader: "format, Compaction"})
	compactionLoop(t, r, echo, opted, 8)
	require.NotEmpty(t, r.Events.Of(events.ContextCompacted), "the header opts in")
	bodies := r.upstreamBodies()
	require.True(t, strings.Contains(string(bodies[len(bodies)-1]), compactionMark), "the last request carries compacted results")
}

// TestCompactionOff: with the feature off (the default) the same session
// sends every result upstream as the agent sent it, append-only.
func TestCompactionOff(t *testing.T) {
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			r := newRig(t, rigOptions{})
			a := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": "off-" + d.Name()})
			sent := compactionLoop(t, r, nil, a, compactionRounds)
			bodies := r.upstreamBodies()
			require.Len(t, bodies, len(sent))
			for i, b := range bodies {
				var up, own []kit.HistItem
				for _, it := range d.ToolHistory(b) {
					if !it.Call {
						up = append(up, it)
					}
				}
				for _, it := range d.ToolHistory([]byte(sent[i])) {
					if !it.Call {
						own = append(own, it)
					}
				}
				require.Equal(t, own, up, "request %d: results go upstream as sent", i)
				if i > 0 {
					require.Equal(t, -1, kit.PrefixBreak(d, bodies[i-1], b), "request %d", i)
				}
			}
			require.Empty(t, r.Events.Of(events.ContextCompacted))
		})
	}
}
