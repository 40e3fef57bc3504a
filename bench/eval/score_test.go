package eval

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

func TestScoreChapters(t *testing.T) {
	phases := []Phase{phaseResearch, phaseImplement, phaseVerify, phaseDocument}
	for _, tc := range []struct {
		name   string
		titles []string
		want   Score
		names  []string
	}{
		{"none", nil, Score{0, 4}, []string{}},
		{"all in order", []string{"Research: the package", "Implement Title", "Test it", "Document Title"}, Score{4, 4},
			[]string{"research", "implement", "verify", "document"}},
		{"out of order", []string{"Testing", "Implementing Title"}, Score{1, 4}, []string{"verify", "implement"}},
		{"a phase twice counts once", []string{"Exploring", "Reading more", "Writing code"}, Score{2, 4},
			[]string{"research", "research", "implement"}},
		{"unmatched titles are skipped", []string{"Lunch", "Research", "Misc", "Check"}, Score{2, 4},
			[]string{"", "research", "", "verify"}},
		{"the first matching phase wins", []string{"Research and test"}, Score{1, 4}, []string{"research"}},
		{"a late return does not undo the order", []string{"Research", "Implement", "Research again", "Verify", "Docs"},
			Score{4, 4}, []string{"research", "implement", "research", "verify", "document"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, names := scoreChapters(phases, tc.titles)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.names, names)
		})
	}
}

func TestLongestIncreasing(t *testing.T) {
	for _, tc := range []struct {
		xs   []int
		want int
	}{
		{nil, 0}, {[]int{0}, 1}, {[]int{2, 1, 0}, 1}, {[]int{0, 0, 0}, 1}, {[]int{0, 2, 1, 3}, 3}, {[]int{3, 0, 1, 2}, 3},
	} {
		require.Equal(t, tc.want, longestIncreasing(tc.xs), "%v", tc.xs)
	}
}

// calls builds a call sequence: name, args, fate.
func calls(spec ...[3]string) []modelCall {
	var out []modelCall
	for _, s := range spec {
		out = append(out, modelCall{Name: s[0], Args: canonicalJSON(s[1]), Fate: s[2]})
	}
	return out
}

var (
	sel001   = [3]string{"select_active_intent", `{"intent_id":"INT-001"}`, fateClaimed}
	selList  = [3]string{"select_active_intent", `{}`, fateClaimed}
	selBad   = [3]string{"select_active_intent", `{"intent_id":"X"}`, fateRefused}
	readA    = [3]string{"read_file", `{"path":"a"}`, fateAllowed}
	writeA   = [3]string{"write_file", `{"file_path":"a","content":"x"}`, fateAllowed}
	writeARe = [3]string{"write_file", `{"content":"x", "file_path":"a"}`, fateRefused}
	writeB   = [3]string{"write_file", `{"file_path":"b","content":"x"}`, fateRefused}
)

func TestScoreIntent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		calls []modelCall
		want  Score
	}{
		{"no write: does not apply", calls(readA, sel001), Score{}},
		{"nothing", nil, Score{}},
		{"selected, then written", calls(readA, sel001, writeA), Score{1, 1}},
		{"written first", calls(writeA, sel001, writeA), Score{0, 1}},
		{"a refused write counts as the first write", calls(writeARe, sel001, writeA), Score{0, 1}},
		{"listing the intents selects none", calls(selList, writeA), Score{0, 1}},
		{"a refused selection selects none", calls(selBad, writeA), Score{0, 1}},
		{"selected, never written", calls(sel001, readA), Score{}},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, scoreIntent(tc.calls)) })
	}
}

func TestScoreRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		calls []modelCall
		want  Score
	}{
		{"no refusal", calls(readA, writeA), Score{}},
		{"refused, not repeated", calls(writeB, readA), Score{1, 1}},
		{"refused, repeated (same arguments in another key order)", calls(writeARe, readA, writeA), Score{0, 1}},
		{"repeated after an intent was selected: respected", calls(writeB, sel001, writeB), Score{2, 2}},
		{"refused, other arguments", calls(writeB, writeARe), Score{2, 2}},
		{"a failed selection does not clear the refusal", calls(writeB, selBad, writeB), Score{2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, scoreRefusals(tc.calls)) })
	}
}

func TestCanonicalJSON(t *testing.T) {
	require.Equal(t, `{"a":1,"b":[true,null]}`, canonicalJSON(`{ "b": [true, null], "a": 1 }`))
	require.Equal(t, `not json`, canonicalJSON(`not json`))
	require.Equal(t, canonicalJSON(`{"c":"<&>"}`), canonicalJSON(`{ "c" : "<&>" }`))
}

// reply renders one mock reply as d's non-streaming body, through a mock
// server.
func replyBody(t *testing.T, d kit.Driver, r mock.Reply) []byte {
	t.Helper()
	m := kit.StartMock(t, mock.Options{})
	m.Script(r)
	a := kit.NewAgent(d, m.URL(), nil)
	a.User("hi")
	resp, body := a.Post(t)
	require.Equal(t, 200, resp.StatusCode, string(body))
	return body
}

func TestCheckContinuations(t *testing.T) {
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			cut := replyBody(t, d, mock.Reply{Text: "The first half, ", Stop: "max_tokens"})
			end := replyBody(t, d, mock.Reply{Text: "and the second."})
			whole := replyBody(t, d, mock.Reply{Text: "The first half, and the second."})
			read := func(b []byte) kit.Reply {
				r, err := d.ParseReply(b)
				require.NoError(t, err)
				return r
			}
			up := []Upstream{{Status: 200, Response: cut}, {Status: 200, Response: end}}
			for _, tc := range []struct {
				name     string
				ex       Exchange
				expected []string
				why      string
			}{
				{"no cut: nothing to check", Exchange{Upstream: up[1:], Reply: read(end)}, nil, "-"},
				{"whole", Exchange{Upstream: up, Reply: read(whole)}, nil, ""},
				{"whole, as scripted", Exchange{Upstream: up, Reply: read(whole)}, []string{"The first half, and the second."}, ""},
				{"not as scripted", Exchange{Upstream: up, Reply: read(whole)}, []string{"Something else"}, "lacks the script's whole reply"},
				{"still cut", Exchange{Upstream: up[:1], Reply: read(cut)}, nil, "still cut"},
				{"a piece lost", Exchange{Upstream: up, Reply: read(end)}, nil, "not the model's pieces joined"},
				{"failed", Exchange{Upstream: up, Err: "status 502"}, nil, "failed"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					got := checkContinuations(d, []Exchange{tc.ex}, tc.expected)
					if tc.why == "-" {
						require.Empty(t, got)
						return
					}
					require.Len(t, got, 1)
					require.Equal(t, tc.why == "", got[0].Seamless, got[0].Why)
					require.Contains(t, got[0].Why, tc.why)
				})
			}
		})
	}
}

// TestModelCalls: the calls of the model's replies get their fates from
// the feed, by call id, or by tool in order where the ids differ.
func TestModelCalls(t *testing.T) {
	d, _ := kit.Lookup("anthropic")
	body := replyBody(t, d, mock.Reply{ToolCalls: []mock.ToolCall{
		{ID: "c1", Name: "write_file", Args: `{"file_path":"a"}`}, {ID: "c2", Name: "read_file", Args: `{}`},
		{ID: "c3", Name: "read_file", Args: `{"path":"x"}`},
	}})
	evs := []events.Event{
		{Type: events.CallRefused, Data: map[string]any{"tool": "write_file", "call_id": "c1"}},
		{Type: events.ChapterOpened, Data: map[string]any{"title": "x"}},
		{Type: events.CallClaimed, Data: map[string]any{"tool": "read_file", "call_id": "other"}},
		{Type: events.CallAllowed, Data: map[string]any{"tool": "read_file", "call_id": "c3"}},
	}
	got := modelCalls(d, []Exchange{{Upstream: []Upstream{{Status: 200, Response: body}, {Status: 500, Response: []byte("x")}}}}, evs)
	require.Equal(t, []modelCall{
		{Name: "write_file", Args: `{"file_path":"a"}`, ID: "c1", Fate: fateRefused},
		{Name: "read_file", Args: `{}`, ID: "c2", Fate: fateClaimed},
		{Name: "read_file", Args: `{"path":"x"}`, ID: "c3", Fate: fateAllowed},
	}, got)
}

func TestNumber(t *testing.T) {
	require.Equal(t, int64(3), number(3))
	require.Equal(t, int64(4), number(int64(4)))
	require.Equal(t, int64(5), number(5.0))
	require.Equal(t, int64(0), number("6"))
	require.Equal(t, int64(0), number(nil))
}
