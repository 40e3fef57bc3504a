package turn

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/anthropic"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/state"
)

// v0TurnBlob is a turn entry as stores hold it from before records were
// versioned: no "v", the results with conv.ToolResult's Go field names.
const v0TurnBlob = `{"items":["{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_rm\",\"name\":\"rm\",\"input\":{}}]}"],"tail":1,"results":[{"CallID":"toolu_rm","Name":"rm","Content":"refused: out of scope","IsError":true,"Freeform":false}]}`

func TestDecodeTurnRecordV0(t *testing.T) {
	r, err := decodeTurnRecord([]byte(v0TurnBlob))
	require.NoError(t, err)
	require.Equal(t, recordVersion, r.V)
	require.Equal(t, 1, r.Tail)
	require.Len(t, r.Items, 1)
	require.Equal(t, []conv.ToolResult{{CallID: "toolu_rm", Name: "rm", Content: "refused: out of scope", IsError: true}}, r.Results)
}

func TestDecodeTurnRecordV1RoundTrip(t *testing.T) {
	in := turnRecord{V: recordVersion, Items: []string{`{"a":"<b>"}`}, Tail: 2, Results: []conv.ToolResult{{CallID: "c", Name: "n", Content: "x", Freeform: true}}}
	data := encodeRecord(in)
	require.Contains(t, string(data), `"v":1`)
	require.Contains(t, string(data), `"call_id":"c"`)
	out, err := decodeTurnRecord(data)
	require.NoError(t, err)
	require.Equal(t, in, out)
}

func TestDecodeRecordUnknownVersion(t *testing.T) {
	_, err := decodeTurnRecord([]byte(`{"v":2,"items":[],"tail":0}`))
	require.ErrorIs(t, err, errRecordVersion)
	_, err = decodeUserText([]byte(`{"v":7,"texts":["x"]}`))
	require.ErrorIs(t, err, errRecordVersion)
	_, err = decodeTurnRecord([]byte(`{"v":"one"}`))
	require.Error(t, err)
	require.NotErrorIs(t, err, errRecordVersion)
	// Version 0 user text is what stores hold today.
	texts, err := decodeUserText([]byte(`{"texts":["a"]}`))
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, texts)
}

// A v0 turn entry in a stored ledger replays as it always did; an entry of
// an unknown version is skipped and counted, and the rest still applies.
func TestReplayLedgerV0AndUnknown(t *testing.T) {
	codec := anthropic.Descriptor.Codec()
	tc := codec
	body := []byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"ok"}]},{"role":"user","content":"next"}]}`)
	view, err := codec.ParseRequest(body)
	require.NoError(t, err)
	anchors := conv.Anchors(view.Messages)
	ledger := []state.LedgerEntry{
		{Kind: kindTurn, Anchor: anchors[1], Data: []byte(v0TurnBlob)},
		{Kind: kindUserText, Anchor: anchors[2], Data: []byte(`{"v":9,"texts":["from the future"]}`)},
		{Kind: kindUserText, Anchor: anchors[0], Data: []byte(`{"texts":["reminder"]}`)},
	}
	out, _, st, err := replayLedger(tc, body, anchors, 0, rootAnchor(anchors), ledger, nil, false)
	require.NoError(t, err)
	require.Equal(t, replayStats{applied: 2, unreadable: 1}, st)
	require.Contains(t, string(out), "toolu_rm")
	require.Contains(t, string(out), "refused: out of scope")
	require.Contains(t, string(out), "reminder")
	require.NotContains(t, string(out), "from the future")
}

// Entries of different turns replay the same whatever their order in the
// ledger: in conversation order (reversed for the replay), reversed, or
// shuffled (sorted).
func TestReplayLedgerAnyOrder(t *testing.T) {
	codec := anthropic.Descriptor.Codec()
	body := msgsBody(questionsAndAnswers("", 6)...)
	anchors := anchorsOf(t, codec, body)
	var ledger []state.LedgerEntry
	for i := 0; i < len(anchors); i += 2 {
		ledger = append(ledger, state.LedgerEntry{Kind: kindUserText, Anchor: anchors[i], Data: []byte(fmt.Sprintf(`{"texts":["note %d"]}`, i))})
	}
	ledger = append(ledger, state.LedgerEntry{Kind: kindTurn, Anchor: anchors[5], Data: []byte(v0TurnBlob)})
	want, _, st, err := replayLedger(codec, body, anchors, 0, rootAnchor(anchors), ledger, nil, false)
	require.NoError(t, err)
	require.Equal(t, len(ledger), st.applied)
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 20 {
		l := slices.Clone(ledger)
		if trial == 0 {
			slices.Reverse(l)
		} else {
			rng.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
		}
		got, _, _, err := replayLedger(codec, body, anchors, 0, rootAnchor(anchors), l, nil, false)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "trial %d", trial)
	}
}

// Entries recorded in another conversation (another first anchor: a
// sub-agent's, sharing the session) are counted missed without being
// looked for, even one whose anchor the conversation holds (forged here:
// anchors chain every message before theirs, so a real one cannot be);
// entries recorded before roots were (Root "") are looked for as always.
// Otherwise the replay is the one without roots.
func TestReplayLedgerSkipsOtherConversations(t *testing.T) {
	codec := anthropic.Descriptor.Codec()
	conversation := func(who string) ([]byte, []string) {
		body := msgsBody(questionsAndAnswers(who+" ", 4)...)
		return body, anchorsOf(t, codec, body)
	}
	body, anchors := conversation("main")
	_, sub := conversation("sub-agent")
	root, subRoot := rootAnchor(anchors), rootAnchor(sub)
	require.NotEqual(t, root, subRoot)
	text := func(anchor, root, note string) state.LedgerEntry {
		return state.LedgerEntry{Kind: kindUserText, Anchor: anchor, Root: root, Data: []byte(`{"texts":["` + note + `"]}`)}
	}
	ledger := []state.LedgerEntry{
		text(anchors[0], root, "main 0"),
		text(sub[0], subRoot, "sub 0"),
		text(anchors[2], "", "main 2, recorded before roots"),
		text(sub[2], "", "sub 2, recorded before roots"),
		text(sub[4], subRoot, "sub 4"),
		text(anchors[4], root, "main 4"),
		{Kind: kindTurn, Anchor: anchors[5], Root: root, Data: []byte(v0TurnBlob)},
	}
	got, _, st, err := replayLedger(codec, body, anchors, 0, root, ledger, nil, false)
	require.NoError(t, err)
	require.Equal(t, replayStats{applied: 4, missed: 3}, st)
	unrooted := slices.Clone(ledger)
	for i := range unrooted {
		unrooted[i].Root = ""
	}
	want, _, wst, err := replayLedger(codec, body, anchors, 0, root, unrooted, nil, false)
	require.NoError(t, err)
	require.Equal(t, st, wst)
	require.Equal(t, string(want), string(got))

	forged := append(slices.Clone(ledger), text(anchors[6], subRoot, "forged"))
	got, _, st, err = replayLedger(codec, body, anchors, 0, root, forged, nil, false)
	require.NoError(t, err)
	require.Equal(t, replayStats{applied: 4, missed: 4}, st)
	require.NotContains(t, string(got), "forged")
}

// anchorFinder finds every anchor, in or out of order, and -1 for one
// not there, before and after it gives up scanning for a map.
func TestAnchorFinderFindsInAnyOrder(t *testing.T) {
	anchors := make([]string, 50)
	for i := range anchors {
		anchors[i] = fmt.Sprintf("a%02d", i)
	}
	want := func(q string) int { return slices.Index(anchors, q) }
	rng := rand.New(rand.NewPCG(1, 2))
	for _, order := range []string{"ascending", "shuffled", "missing"} {
		find := anchorFinder(anchors)
		var qs []string
		for range 3 { // past the scan budget
			for i := range anchors {
				qs = append(qs, anchors[i])
				if order == "missing" {
					qs = append(qs, fmt.Sprintf("x%d", i))
				}
			}
		}
		if order == "shuffled" {
			rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
		}
		for _, q := range qs {
			require.Equal(t, want(q), find(q), "%s: %q", order, q)
		}
	}
	require.Equal(t, -1, anchorFinder(nil)("a"))
	dup := []string{"a", "b", "a"}
	require.Equal(t, "a", dup[anchorFinder(dup)("a")])
}

// The memo gives what decoding gives, for records seen before or not, and
// errors are not remembered.
func TestUserTextMemoIsDecode(t *testing.T) {
	var m userTextMemo
	records := [][]byte{
		encodeRecord(newUserTextRecord([]string{"a", "b\n\"c\""})),
		encodeRecord(newUserTextRecord([]string{"é"})),
		[]byte(`{"texts":["old"]}`),
	}
	for range 3 {
		for _, r := range records {
			want, werr := decodeUserText(r)
			got, err := m.decode(r)
			require.NoError(t, werr)
			require.NoError(t, err)
			require.Equal(t, want, got)
		}
		for _, bad := range []string{`{"v":7,"texts":["x"]}`, `{"texts":[1]}`, `{`} {
			_, err := m.decode([]byte(bad))
			require.Error(t, err, bad)
		}
	}
	require.Len(t, m.texts, len(records))
	// Full: it starts over and still decodes.
	for i := range maxUserTextMemo + 10 {
		got, err := m.decode(encodeRecord(newUserTextRecord([]string{fmt.Sprint(i)})))
		require.NoError(t, err)
		require.Equal(t, []string{fmt.Sprint(i)}, got)
	}
	require.LessOrEqual(t, len(m.texts), maxUserTextMemo)
}

// TestAppendLedgerCopiesOnWrite checks appendLedger never writes into the
// ledger array it was given, which the store's other copies of the session
// share (state.Session.Ledger): not when it replaces an entry, appends one,
// or drops the oldest beyond maxLedgerEntries.
func TestAppendLedgerCopiesOnWrite(t *testing.T) {
	entry := func(anchor, data string) state.LedgerEntry {
		return state.LedgerEntry{Kind: kindUserText, Anchor: anchor, Data: []byte(data)}
	}
	for _, n := range []int{0, 3, maxLedgerEntries} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s := &state.Session{}
			for i := range n {
				s.Ledger = append(s.Ledger, entry(fmt.Sprint("a", i), "old"))
			}
			stored := s.Clone()
			before := slices.Clone(stored.Ledger)
			add := []state.LedgerEntry{entry("new", "new")}
			if n > 0 {
				add = append(add, entry("a0", "replaced")) // same kind and anchor: replaces
			}
			appendLedger(s, add)
			require.Equal(t, before, stored.Ledger, "the shared array is unchanged")

			want := slices.Clone(before)
			if n > 0 {
				want[0] = entry("a0", "replaced")
			}
			want = append(want, entry("new", "new"))
			if k := len(want) - maxLedgerEntries; k > 0 {
				want = want[k:]
			}
			require.Equal(t, want, s.Ledger)
			require.LessOrEqual(t, len(s.Ledger), maxLedgerEntries)
		})
	}
}

// BenchmarkAnchorFinder looks up a ledger's anchors newest first, as
// replayLedger does: a ledger that covers the last turns of a long
// conversation (a session first seen mid-conversation, or one whose ledger
// dropped its oldest entries), and one that covers the whole of it.
func BenchmarkAnchorFinder(b *testing.B) {
	anchors := make([]string, 1860)
	for i := range anchors {
		anchors[i] = fmt.Sprintf("%032x", i*7919)
	}
	for _, c := range []struct {
		name  string
		first int
		every int
	}{{"last_16_turns", 1828, 2}, {"whole", 0, 4}} {
		var ledger []string
		for i := c.first; i < len(anchors); i += c.every {
			ledger = append(ledger, anchors[i])
		}
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				find := anchorFinder(anchors)
				for _, a := range slices.Backward(ledger) {
					if find(a) < 0 {
						b.Fatal("not found")
					}
				}
			}
		})
	}
}

// An entry that records its anchor's position (LedgerEntry.At) is looked
// for there: the replay is the same as with positions unknown, an entry
// of a longer run of the conversation (rewound since) is missed, and one
// whose anchor is not at its recorded position is missed when no message
// was left out (an anchor can be nowhere else) but searched for when some
// were (its position in what was kept is then not At less left, for a
// message kept from before the ones left out).
func TestReplayLedgerLooksWhereEntriesSay(t *testing.T) {
	codec := anthropic.Descriptor.Codec()
	msgs := questionsAndAnswers("", 6)
	all := anchorsOf(t, codec, msgsBody(msgs...))
	rewound := msgsBody(msgs[:8]...) // the conversation as an agent rewound it to its fifth question
	anchors := anchorsOf(t, codec, rewound)
	require.Equal(t, all[:8], anchors)
	root := rootAnchor(anchors)
	text := func(at int, note string) state.LedgerEntry {
		return state.LedgerEntry{Kind: kindUserText, Anchor: all[at], Root: root, At: at + 1, Data: []byte(`{"texts":["` + note + `"]}`)}
	}
	ledger := []state.LedgerEntry{text(0, "zero"), text(2, "two"), text(6, "six"), text(8, "eight, rewound"), text(10, "ten, rewound")}
	unplaced := slices.Clone(ledger)
	for i := range unplaced {
		unplaced[i].At = 0
	}
	want, _, wst, err := replayLedger(codec, rewound, anchors, 0, root, unplaced, nil, false)
	require.NoError(t, err)
	got, _, st, err := replayLedger(codec, rewound, anchors, 0, root, ledger, nil, false)
	require.NoError(t, err)
	require.Equal(t, replayStats{applied: 3, missed: 2}, st)
	require.Equal(t, wst, st)
	require.Equal(t, string(want), string(got))
	require.NotContains(t, string(got), "rewound")

	misplaced := slices.Clone(ledger[:3])
	misplaced[1].At = 5 // anchors[4] is not its anchor
	got, _, st, err = replayLedger(codec, rewound, anchors, 0, root, misplaced, nil, false)
	require.NoError(t, err)
	require.Equal(t, replayStats{applied: 2, missed: 1}, st, "looked for at its position only")
	require.NotContains(t, string(got), "two")
	got, _, st, err = replayLedger(codec, rewound, anchors, 1, root, misplaced, nil, false)
	require.NoError(t, err)
	require.Equal(t, replayStats{applied: 3}, st, "searched for: messages were left out")
	require.Contains(t, string(got), "two")
}

// questionsAndAnswers is a conversation of n user questions, each answered
// by the assistant; prefix starts every question.
func questionsAndAnswers(prefix string, n int) []string {
	var msgs []string
	for i := range n {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"%squestion %d"}`, prefix, i),
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"answer %d"}]}`, i))
	}
	return msgs
}

// anchorsOf parses body with codec and returns its messages' anchors.
func anchorsOf(t *testing.T, codec rewrite.Codec, body []byte) []string {
	t.Helper()
	view, err := codec.ParseRequest(body)
	require.NoError(t, err)
	return conv.Anchors(view.Messages)
}
