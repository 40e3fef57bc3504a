package turn

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/hooks"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/anthropic"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/openaichat"
	"github.com/shepherd-proxy/shepherd/rewrite/responses"
)

// editsHook asks for the edits its function computes from the view.
type editsHook struct {
	edits func(*conv.Request) conv.RequestEdits
}

func (editsHook) Name() string { return "edits" }
func (h editsHook) OnRequest(_ context.Context, _ *hooks.Call, req *conv.Request) (conv.RequestEdits, *hooks.Response, error) {
	return h.edits(req), nil, nil
}

// beginEdited begins a turn of api for body in session with a chain that asks
// for edits (then the policy and outcome hooks of the fixture). The turn
// must not fall back to pass-through.
func (f *fixture) beginEdited(t *testing.T, api *rewrite.Descriptor, session, body string, edits func(*conv.Request) conv.RequestEdits, wrap ...func(rewrite.TurnCodec) rewrite.TurnCodec) (*Turn, Start) {
	t.Helper()
	codec := api.Codec()
	tc := codec.(rewrite.TurnCodec)
	for _, w := range wrap {
		if w != nil {
			tc = w(tc)
		}
	}
	view, err := codec.ParseRequest([]byte(body))
	require.NoError(t, err)
	cc, _ := rewrite.Continuer(codec)
	chain := hooks.NewChain(editsHook{edits}, policyHook{}, f.out)
	tn, st := f.e.Begin(context.Background(), Request{
		Call:  hooks.Call{Route: api.Name, Tenant: "t", SessionID: session},
		Chain: chain, Codec: codec, TurnCodec: tc, Continuer: cc,
		View: view, Body: []byte(body),
	})
	require.NotNil(t, tn, "the turn fell back to pass-through")
	require.Zero(t, f.metrics.get("hook_failed_turn_engine"))
	return tn, st
}

func viewOf(t *testing.T, api *rewrite.Descriptor, body []byte) *conv.Request {
	t.Helper()
	req, err := api.Codec().ParseRequest(body)
	require.NoError(t, err, "%s", body)
	return req
}

// texts lists each message's role and text blocks, for comparing views.
func texts(req *conv.Request) []string {
	var out []string
	for _, m := range req.Messages {
		var parts []string
		for _, b := range m.Blocks {
			if b.Kind == conv.BlockText {
				parts = append(parts, b.Text)
			}
		}
		out = append(out, string(m.Role)+":"+strings.Join(parts, "|"))
	}
	return out
}

// Every API: the replacements land in the upstream body (the model reads
// the new text in each result block; call ids kept), and the fresh user
// text still lands on the newest user turn.
func TestReshapeReplaceResultsEveryAPI(t *testing.T) {
	for _, api := range apis.All() {
		t.Run(api.Name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("..", "..", "rewrite", "testdata", api.Name, "request.json"))
			require.NoError(t, err)
			f := newFixture(t, Limits{MaxFollowups: 4, MaxRefusalRounds: 4})
			before := viewOf(t, api, body)
			var n int
			_, st := f.beginEdited(t, api, "s-"+api.Name, string(body), func(req *conv.Request) conv.RequestEdits {
				var e conv.RequestEdits
				for i, m := range req.Messages {
					for j, b := range m.Blocks {
						if b.Kind == conv.BlockToolResult {
							e.ReplaceResults = append(e.ReplaceResults, conv.ResultEdit{Msg: i, Block: j, Text: "first"},
								conv.ResultEdit{Msg: i, Block: j, Text: "elided"}) // the last one wins
							n++
						}
					}
				}
				e.AppendUserText = []string{"fresh note"}
				return e
			})
			require.NotZero(t, n)
			after := viewOf(t, api, st.Body)
			// Chat and Responses put the note in a message of its own after
			// the tool results: the agent's messages keep their positions.
			require.GreaterOrEqual(t, len(after.Messages), len(before.Messages))
			for i, m := range before.Messages {
				for j, b := range m.Blocks {
					if b.Kind != conv.BlockToolResult {
						continue
					}
					got := after.Messages[i].Blocks[j]
					require.Contains(t, []string{"elided", `{"content":"elided"}`}, got.Text)
					require.Equal(t, b.ToolCallID, got.ToolCallID)
				}
			}
			require.Contains(t, string(st.Body), "fresh note")
			require.NotContains(t, string(st.Body), "first")
		})
	}
}

// Anthropic messages of a chat across two topics.
const (
	chOld    = `{"role":"user","content":"Who wrote Hamlet?"}`
	chOldAns = `{"role":"assistant","content":[{"type":"text","text":"Shakespeare."}]}`
	chNew    = `{"role":"user","content":"How do I boil an egg?"}`
	chFollow = `{"role":"user","content":"How long does it take?"}`
)

func anthropicBody(msgs ...string) string {
	return `{"model":"m","max_tokens":100,"system":"Be brief.","tools":[{"name":"topic","input_schema":{"type":"object"}}],"messages":[` +
		strings.Join(msgs, ",") + `]}`
}

// DropBefore leaves the old topic out of the upstream body; a later turn of
// the new topic, dropping at the same point, still gets the ledger replay
// of the turn shepherd changed (a claimed call the agent never saw), and
// the fresh user text lands on the newest user turn.
func TestReshapeDropBeforeKeepsLedgerReplay(t *testing.T) {
	f := newFixture(t, Limits{MaxFollowups: 4, MaxRefusalRounds: 4})
	api := anthropic.Descriptor
	dropAt2 := func(*conv.Request) conv.RequestEdits {
		return conv.RequestEdits{DropBefore: 2, AppendUserText: []string{"[note]"}}
	}
	// Turn 1 of the new topic: only the new question goes up; the model
	// makes a call shepherd answers, then replies.
	body1 := anthropicBody(chOld, chOldAns, chNew)
	tn, st := f.beginEdited(t, api, "s1", body1, dropAt2)
	sent := viewOf(t, api, st.Body)
	require.Equal(t, []string{"user:How do I boil an egg?|[note]"}, texts(sent))
	require.Equal(t, "Be brief.", sent.System)
	w := &scriptWriter{replies: [][]byte{[]byte(reply("tool_use", "Let me note that.", "topic"))}}
	up := &scriptSender{replies: []string{reply("end_turn", "Ten minutes.")}}
	require.NoError(t, tn.Run(context.Background(), w, up))
	require.Len(t, up.sent, 1)
	require.NotContains(t, up.sent[0], "Hamlet", "the follow-up round keeps the dropped history out")

	// Turn 2: the agent sends its copy back with a follow-up question.
	codec := api.Codec().(rewrite.TurnCodec)
	items, err := codec.ReplyAsMessages(w.final.Reply)
	require.NoError(t, err)
	withReply, err := codec.AppendMessages([]byte(body1), items)
	require.NoError(t, err)
	body2, err := codec.AppendMessages(withReply, [][]byte{[]byte(chFollow)})
	require.NoError(t, err)
	applied := f.metrics.get("ledger_applied")
	_, st = f.beginEdited(t, api, "s1", string(body2), dropAt2)
	require.Greater(t, f.metrics.get("ledger_applied"), applied, "the ledger entries of the new topic replay")
	sent = viewOf(t, api, st.Body)
	require.NotContains(t, string(st.Body), "Hamlet")
	require.Contains(t, string(st.Body), "toolu_topic_0", "the claimed call the model made is replayed")
	got := texts(sent)
	require.Equal(t, "user:How do I boil an egg?|[note]", got[0], "the earlier turn's note is replayed")
	require.Equal(t, "user:How long does it take?|[note]", got[len(got)-1], "the fresh note lands on the newest user turn")
}

// DropBefore is capped at the newest user turn, and does nothing when the
// conversation ends with an assistant prefill.
func TestReshapeDropBeforeNeverDropsNewestUserTurn(t *testing.T) {
	f := newFixture(t, Limits{})
	api := anthropic.Descriptor
	_, st := f.beginEdited(t, api, "s1", anthropicBody(chOld, chOldAns, chNew), func(*conv.Request) conv.RequestEdits {
		return conv.RequestEdits{DropBefore: 99}
	})
	require.Equal(t, []string{"user:How do I boil an egg?"}, texts(viewOf(t, api, st.Body)))

	prefill := anthropicBody(chOld, chOldAns, chNew, `{"role":"assistant","content":"Step 1:"}`)
	_, st = f.beginEdited(t, api, "s2", prefill, func(*conv.Request) conv.RequestEdits { return conv.RequestEdits{DropBefore: 2} })
	require.Len(t, viewOf(t, api, st.Body).Messages, 4)
}

// Chat: system and developer messages stay, wherever they are; the fresh
// user text lands on the newest user message.
func TestReshapeDropBeforeKeepsChatSystem(t *testing.T) {
	f := newFixture(t, Limits{})
	api := openaichat.Descriptor
	body := `{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"developer","content":"Use metric."},` +
		`{"role":"user","content":"Who wrote Hamlet?"},{"role":"assistant","content":"Shakespeare."},` +
		`{"role":"system","content":"Mid note."},{"role":"user","content":"How do I boil an egg?"}]}`
	for _, wrap := range []func(rewrite.TurnCodec) rewrite.TurnCodec{nil, oneByOne} {
		_, st := f.beginEdited(t, api, "s1", body, func(*conv.Request) conv.RequestEdits {
			return conv.RequestEdits{DropBefore: 5, AppendUserText: []string{"[note]"}}
		}, wrap)
		require.Equal(t, []string{"system:Be brief.", "system:Use metric.", "system:Mid note.", "user:How do I boil an egg?|[note]"},
			texts(viewOf(t, api, st.Body)))
	}
}

// Responses: dropping up to an assistant message whose neighbour is also
// dropped leaves the kept assistant items alone (the view merges
// consecutive assistant items, so dropping from the end would merge them
// with the dropped ones).
func TestReshapeDropBeforeResponsesMergedAssistant(t *testing.T) {
	f := newFixture(t, Limits{})
	api := responses.Descriptor
	asst := func(s string) string {
		return `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"` + s + `"}]}`
	}
	body := `{"model":"m","instructions":"Be brief.","input":[{"role":"user","content":"q0"},` + asst("a1") +
		`,{"role":"user","content":"q2"},` + asst("a3") + `,{"role":"user","content":"q4"}]}`
	for _, wrap := range []func(rewrite.TurnCodec) rewrite.TurnCodec{nil, oneByOne} {
		_, st := f.beginEdited(t, api, "s1", body, func(*conv.Request) conv.RequestEdits { return conv.RequestEdits{DropBefore: 3} }, wrap)
		require.Equal(t, []string{"assistant:a3", "user:q4"}, texts(viewOf(t, api, st.Body)))
		require.Len(t, gjson.GetBytes(st.Body, "input").Array(), 2)
	}
}

// oneByOne hides a codec's rewrite.MessageLocator: the engine then leaves
// messages out one ReplaceMessages at a time.
func oneByOne(tc rewrite.TurnCodec) rewrite.TurnCodec { return struct{ rewrite.TurnCodec }{tc} }

// BenchmarkReshapeDropBefore drops 200 of 201 messages of an Anthropic
// chat (one ReplaceMessages per message left out).
func BenchmarkReshapeDropBefore(b *testing.B) {
	var msgs []string
	for i := range 100 {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"question %d about something"}`, i),
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"answer %d %s"}]}`, i, strings.Repeat("x", 400)))
	}
	msgs = append(msgs, chNew)
	body := anthropicBody(msgs...)
	codec := anthropic.Descriptor.Codec()
	view, err := codec.ParseRequest([]byte(body))
	require.NoError(b, err)
	t := &Turn{tc: codec.(rewrite.TurnCodec), body: []byte(body), view: view}
	anchors := conv.Anchors(view.Messages)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, _, err := t.reshape(conv.RequestEdits{DropBefore: 200}, append([]string(nil), anchors...)); err != nil {
			b.Fatal(err)
		}
	}
}
