package rewrite_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// TestParsedEditsSameBytes: a codec that parsed the body edits it through
// its index (Parsed): the ledger replay, then the request edits, each on
// the body the previous step returned. The bytes must be exactly those of
// a codec that never parsed it (every step walks the body), for every API,
// on fixtures and long conversations, single and batched replays, and
// with or without each edit.
func TestParsedEditsSameBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tool := conv.ToolSpec{Name: "shepherd_note", Description: "a \"quoted\" tool", Parameters: []byte(`{"type":"object"}`)}
	// Every result stays as it was while later trials reuse the pooled
	// buffers of intermediate bodies (a body returned to the caller must
	// never be recycled).
	var kept [][2][]byte
	defer func() {
		for i, k := range kept {
			require.Equal(t, string(k[0]), string(k[1]), "result %d changed after later edits", i)
		}
	}()
	for _, api := range apis.All() {
		t.Run(api.Name, func(t *testing.T) {
			spliced := 0 // trials whose user texts went in as splices
			mapped := 0  // trials whose one copy reported its copy runs
			defer func() {
				if !t.Failed() {
					require.Positive(t, spliced, "no trial's user texts became splices")
					require.Positive(t, mapped, "no trial's edit reported its copy runs")
				}
			}()
			for _, body := range [][]byte{apitest.Fixture(t, api, "request.json"), apitest.LongConversation(t, api, 12), apitest.LongConversation(t, api, 150)} {
				turns := apitest.UserTurns(t, api, body, false)
				require.NotEmpty(t, turns)
				trials := 32
				if len(body) > 32<<10 {
					trials = 8 // past the pooled size: intermediate bodies are recycled
				}
				for trial := range trials {
					var ops []rewrite.UserTexts
					for _, p := range turns {
						if trial%3 == 0 && p == turns[len(turns)-1] || trial%3 != 0 && rng.IntN(2) == 0 {
							ops = append(ops, rewrite.UserTexts{Pos: p, Texts: []string{fmt.Sprintf("note %d", p)}})
						}
					}
					var e conv.RequestEdits
					if trial&1 == 0 {
						e.AddTools = []conv.ToolSpec{tool}
					}
					if trial&2 == 0 {
						e.AppendSystem = []string{"chapter list"}
					}
					if trial&4 == 0 {
						e.SetMaxOutputTokens = 1234
					}
					if trial&8 != 0 {
						e.AppendUserText = []string{"newest"}
					}
					want := editAll(t, api.NewCodec(nil), body, ops, e, false)
					got := editAll(t, api.NewCodec(apitest.Views), body, ops, e, true)
					require.Equal(t, string(want), string(got), "trial %d: ops %v, edits %+v", trial, ops, e)
					kept = append(kept, [2][]byte{want, got})
					// The user texts and the edits in one copy, as the turn
					// engine makes them after a ledger replay.
					c := api.NewCodec(apitest.Views)
					_, err := c.ParseRequest(body)
					require.NoError(t, err)
					copies := rewrite.ArrayOpCopies()
					together, err := c.(rewrite.UserTextsEditor).ApplyEditsWithUserTexts(body, ops, e)
					require.NoError(t, err)
					// With the user texts spliced, the system note, the
					// output limit and the newest user text go in without
					// copying the conversation (for Chat, whose system
					// note goes into the conversation too: InsertHead).
					if _, ok := rewrite.UserTextSplices(c.(rewrite.TurnCodec), c.(rewrite.UserTurnLocator), nil, body, ops); ok && len(ops) > 0 && len(e.AddTools) == 0 {
						require.Zero(t, rewrite.ArrayOpCopies()-copies, "trial %d: an array was copied to edit it, edits %+v", trial, e)
					}
					require.Equal(t, string(want), string(together), "together, trial %d: ops %v, edits %+v", trial, ops, e)
					kept = append(kept, [2][]byte{want, together})
					// The copy runs the codec reports are true, and
					// forgotten by its next edit.
					if runs := c.(rewrite.CopyMapper).CopyRuns(body, together); runs != nil {
						mapped++
						requireTrueRuns(t, runs, body, together)
						_, err := c.ApplyEdits(together, conv.RequestEdits{SetMaxOutputTokens: 99})
						require.NoError(t, err)
						require.Nil(t, c.(rewrite.CopyMapper).CopyRuns(body, together), "copy runs kept past a later edit")
					}
					if len(ops) > 0 {
						if _, ok := rewrite.UserTextSplices(c.(rewrite.TurnCodec), c.(rewrite.UserTurnLocator), nil, body, ops); ok {
							spliced++ // else overlapping turns (tool runs): one by one
						}
					}
				}
			}
		})
	}
}

// requireTrueRuns fails unless runs are in order, inside both bodies, and
// each a verbatim copy of src in out.
func requireTrueRuns(t *testing.T, runs []rewrite.CopyRun, src, out []byte) {
	t.Helper()
	require.True(t, rewrite.ValidCopyRuns(runs, len(out), len(src)), "runs %v", runs)
	for _, r := range runs {
		require.Equal(t, string(src[r.Src:r.Src+r.Len]), string(out[r.Out:r.Out+r.Len]), "run %+v", r)
	}
}

// editAll replays ops then applies e, as the turn engine builds a body;
// with parse, the codec parses body first (and so remembers its index).
func editAll(t *testing.T, c rewrite.Codec, body []byte, ops []rewrite.UserTexts, e conv.RequestEdits, parse bool) []byte {
	t.Helper()
	if parse {
		_, err := c.ParseRequest(body)
		require.NoError(t, err)
	}
	out := body
	if len(ops) > 0 {
		var err error
		out, err = c.(rewrite.TurnCodec).AppendUserTexts(out, ops)
		require.NoError(t, err)
	}
	out, err := c.ApplyEdits(out, e)
	require.NoError(t, err)
	if parse {
		// Later edits through the same codec, of out itself and of another
		// body (as a continuation makes), must leave out alone.
		follow := append(append([]byte(nil), out...), ' ')
		for _, b := range [][]byte{out, follow} {
			for _, later := range []conv.RequestEdits{{SetMaxOutputTokens: 99}, {AppendSystem: []string{"x"}}, {AddTools: e.AddTools}} {
				_, err := c.ApplyEdits(b, later)
				require.NoError(t, err)
			}
		}
	}
	return out
}

// TestParsedEscapedScratchKept: a replay's pooled result that the request
// edits pass on unchanged (no edits) is the body sent upstream; later
// edits through the same codec, and other requests' edits, never recycle
// it.
func TestParsedEscapedScratchKept(t *testing.T) {
	for _, api := range apis.All() {
		// Past the pooled size, with every member a later edit may edit.
		long := apitest.LongConversation(t, api, 300)
		body := append([]byte(`{"max_tokens":5,"max_output_tokens":5,"generationConfig":{"maxOutputTokens":5},"tools":[],`), long[1:]...)
		turns := apitest.UserTurns(t, api, body, false)
		ops := []rewrite.UserTexts{{Pos: turns[len(turns)-1], Texts: []string{"note"}}}
		c := api.NewCodec(apitest.Views)
		out := editAll(t, c, body, ops, conv.RequestEdits{}, true)
		want := string(out)
		for i := range 8 { // other requests take pooled buffers and write other bytes
			other := []rewrite.UserTexts{{Pos: turns[len(turns)-1], Texts: []string{fmt.Sprintf("other %d", i)}}}
			editAll(t, api.NewCodec(apitest.Views), body, other, conv.RequestEdits{SetMaxOutputTokens: 7}, true)
		}
		require.Equal(t, want, string(out), "%s: the body sent upstream changed", api.Name)
	}
}

// TestEditMembersInsert: ops with an Insert give the bytes their Op gives
// on the whole body (empty arrays and strings, whitespace, escapes, later
// ops on the same member), without running Op when the value is one the
// Insert takes and the op edits it first; the result stays indexed.
func TestEditMembersInsert(t *testing.T) {
	bodies := []string{
		`{"tools":[],"x":1,"s":""}`,
		`{"tools": [ ] ,"x":1,"s":"a\n\"b\""}`,
		"{\"tools\":[{\"a\":1} ,\n {\"b\":2}\n],\"x\":1,\"s\":\"\\u00e9\"}",
		`{"x":1,"tools":[1],"s":"t"}`,
		`{"x":1,"tools":null,"s":null}`,
	}
	items := []byte(`{"n":1},{"n":2}`)
	more := []byte(`3`)
	texts := []string{"note <1>", "line\nnext"}
	calls := 0
	appendOp := func(it []byte) rewrite.MemberOp {
		return rewrite.MemberOp{Key: "tools", Insert: func(v []byte) (int, []byte, bool) { return rewrite.InsertElements(v, it) },
			Op: func(b []byte) ([]byte, error) {
				calls++
				return rewrite.AppendToArrayMember(b, "tools", it)
			}}
	}
	suffixOp := rewrite.MemberOp{Key: "s", Insert: func(v []byte) (int, []byte, bool) { return rewrite.InsertSuffix(v, texts) },
		Op: func(b []byte) ([]byte, error) {
			calls++
			s := gjson.GetBytes(b, "s")
			if s.Type != gjson.String {
				return sjson.SetBytes(b, "s", rewrite.JoinTexts(texts))
			}
			return jsonkit.AppendToString(b, s, rewrite.SuffixText(s.Str, texts)), nil
		}}
	plain := rewrite.MemberOp{Key: "tools", Op: func(b []byte) ([]byte, error) { return rewrite.AppendToArrayMember(b, "tools", more) }}
	setX := rewrite.MemberOp{Key: "x", Op: func(b []byte) ([]byte, error) { return rewrite.SetTopLevelInt(b, "x", 42) }}
	for _, body := range bodies {
		for n, ops := range [][]rewrite.MemberOp{
			{appendOp(items), suffixOp},
			{appendOp(items), appendOp(more), suffixOp, suffixOp},
			{appendOp(items), plain},
			{plain, appendOp(items)},
			{setX, appendOp(items), setX, suffixOp},
		} {
			want := []byte(body)
			for _, op := range ops {
				var err error
				want, err = op.Op(want)
				require.NoError(t, err)
			}
			calls = 0
			b := []byte(body)
			idx, ok := jsonkit.ValidIndexed(b)
			require.True(t, ok)
			var p rewrite.Parsed
			p.Remember(idx)
			got, err := p.EditMembers(b, ops)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got), "body %s, ops %d", body, n)
			if strings.Contains(body, "null") {
				continue // null to array or string: EditMembers forgets (a value of another kind)
			}
			if n == 0 {
				require.Zero(t, calls, "an insertion ran Op: the value was copied")
			}
			idx = p.IndexOf(got)
			require.NotNil(t, idx, "the result is indexed: body %s, ops %d", body, n)
			for _, key := range []string{"tools", "x", "s"} {
				start, end, ok := idx.MemberSpan(key)
				require.True(t, ok)
				require.Equal(t, gjson.GetBytes(got, key).Raw, string(got[start:end]), "body %s, ops %d", body, n)
			}
		}
	}
}

// TestEditMembersInsertHead: an InsertHead insertion goes in next to an
// earlier op's splices of the same member when they all lie after the
// first element, and the op runs on the spliced value otherwise; the bytes
// are those of the two ops in turn either way.
func TestEditMembersInsertHead(t *testing.T) {
	body := []byte(`{"m":[{"a":"x"} , {"b":"y"}],"z":1}`)
	at := func(s string) int { return strings.Index(string(body), s) }
	// suffix inserts "!" before the closing quote of the first element's
	// string (reading only that element), as its Op does on the whole body.
	suffix := func(v []byte) (int, []byte, bool) {
		i := strings.IndexByte(string(v), '}')
		return i - 1, []byte("!"), i > 0
	}
	for name, tc := range map[string]struct {
		splice rewrite.Splice
		copies int64
	}{
		"after the first":  {rewrite.Splice{Start: at(`"y"`) + 2, End: at(`"y"`) + 2, Bytes: []byte("+")}, 0},
		"at its end":       {rewrite.Splice{Start: at(`} ,`) + 1, End: at(`} ,`) + 1, Bytes: []byte(" ")}, 0},
		"inside the first": {rewrite.Splice{Start: at(`"x"`) + 1, End: at(`"x"`) + 2, Bytes: []byte("w")}, 1},
	} {
		spliced := append(append(append([]byte(nil), body[:tc.splice.Start]...), tc.splice.Bytes...), body[tc.splice.End:]...)
		first := rewrite.MemberOp{Key: "m", Splices: []rewrite.Splice{tc.splice},
			Op: func([]byte) ([]byte, error) { return spliced, nil }}
		head := rewrite.MemberOp{Key: "m", Insert: suffix, InsertHead: true, Op: func(b []byte) ([]byte, error) {
			i := strings.Index(string(b), `"}`)
			return append(append(append([]byte(nil), b[:i]...), '!'), b[i:]...), nil
		}}
		want, err := head.Op(spliced)
		require.NoError(t, err)
		idx, ok := jsonkit.ValidIndexed(body)
		require.True(t, ok)
		var p rewrite.Parsed
		p.Remember(idx)
		copies := rewrite.ArrayOpCopies()
		got, err := p.EditMembers(body, []rewrite.MemberOp{first, head})
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), name)
		require.Equal(t, tc.copies, rewrite.ArrayOpCopies()-copies, name)
	}
}
