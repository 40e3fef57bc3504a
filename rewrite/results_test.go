package rewrite_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// resultPositions lists the (Msg, Block) of every tool-result block of a
// view.
func resultPositions(req *conv.Request) []conv.ResultEdit {
	var out []conv.ResultEdit
	for i, m := range req.Messages {
		for j, b := range m.Blocks {
			if b.Kind == conv.BlockToolResult {
				out = append(out, conv.ResultEdit{Msg: i, Block: j})
			}
		}
	}
	return out
}

// showsText reports whether a re-parsed result block reads as text: the
// text itself, or (Gemini, whose view is the raw response) {"content":text}.
func showsText(b conv.Block, text string) bool {
	return b.Kind == conv.BlockToolResult &&
		(b.Text == text || b.Text == `{"content":`+string(jsonkit.Quote(text))+`}`)
}

// conversationElems returns the raw elements of body's conversation array.
func conversationElems(t *testing.T, api *rewrite.Descriptor, body []byte) []string {
	t.Helper()
	loc := apitest.CodecFor(api).(rewrite.UserTurnLocator)
	elems := gjson.GetBytes(body, loc.ConversationKey()).Array()
	out := make([]string, len(elems))
	for i, e := range elems {
		out[i] = e.Raw
	}
	return out
}

// Every API replaces tool results: the re-parsed view shows the text in
// each edited block and nothing else changed (every other message, and
// every other block, keeps its view; every other element its bytes);
// edits in any order give the same bytes, and replacing again with the
// same texts changes nothing.
func TestReplaceToolResultsEveryAPI(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, api := range apis.All() {
		t.Run(api.Name, func(t *testing.T) {
			tc, ok := apitest.CodecFor(api).(rewrite.TurnCodec)
			require.True(t, ok)
			rr, ok := tc.(rewrite.ResultReplacer)
			require.True(t, ok, "%s's TurnCodec implements rewrite.ResultReplacer", api.Name)
			for _, body := range [][]byte{apitest.Fixture(t, api, "request.json"), apitest.LongConversation(t, api, 8)} {
				before, err := apitest.ParseUncached(api, body)
				require.NoError(t, err)
				all := resultPositions(before)
				require.NotEmpty(t, all)
				for trial := range 30 {
					var edits []conv.ResultEdit
					for _, p := range all {
						if trial == 0 || rng.IntN(2) == 0 {
							p.Text = fmt.Sprintf("elided %d/%d \"q\" é", p.Msg, p.Block)
							edits = append(edits, p)
						}
					}
					if len(edits) == 0 {
						continue
					}
					out, err := apitest.CheckTurn(t, body, func(b []byte) ([]byte, error) { return rr.ReplaceToolResults(b, edits) })
					require.NoError(t, err)
					after, err := apitest.ParseUncached(api, out)
					require.NoError(t, err)
					require.Len(t, after.Messages, len(before.Messages))
					edited := map[int]bool{}
					for _, e := range edits {
						edited[e.Msg] = true
						blk := after.Messages[e.Msg].Blocks[e.Block]
						require.True(t, showsText(blk, e.Text), "block %d/%d reads %q", e.Msg, e.Block, blk.Text)
						want := before.Messages[e.Msg].Blocks[e.Block]
						require.Equal(t, want.ToolCallID, blk.ToolCallID)
						require.Equal(t, want.IsError, blk.IsError)
					}
					for i := range before.Messages {
						b, a := before.Messages[i], after.Messages[i]
						require.Equal(t, b.Role, a.Role)
						require.Len(t, a.Blocks, len(b.Blocks))
						for j := range b.Blocks {
							if !slices.ContainsFunc(edits, func(e conv.ResultEdit) bool { return e.Msg == i && e.Block == j }) {
								require.Equal(t, b.Blocks[j], a.Blocks[j], "block %d/%d untouched", i, j)
							}
						}
					}
					// Element by element: exactly one changed per edited
					// message; every other one keeps its bytes.
					be, ae := conversationElems(t, api, body), conversationElems(t, api, out)
					require.Len(t, ae, len(be))
					changed := 0
					for k := range be {
						if be[k] != ae[k] {
							changed++
						}
					}
					require.Equal(t, len(edited), changed)
					// Outside the conversation nothing moved.
					key := tc.(rewrite.UserTurnLocator).ConversationKey()
					require.Equal(t, gjson.GetBytes(body, key).Index, gjson.GetBytes(out, key).Index)
					require.Equal(t, len(body)-jsonkit.ValueEnd(gjson.GetBytes(body, key)), len(out)-jsonkit.ValueEnd(gjson.GetBytes(out, key)))

					again, err := rr.ReplaceToolResults(out, edits)
					require.NoError(t, err)
					require.Equal(t, string(out), string(again), "replacing twice with the same text")
					shuffled := slices.Clone(edits)
					rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
					other, err := rr.ReplaceToolResults(body, shuffled)
					require.NoError(t, err)
					require.Equal(t, string(out), string(other), "edits in another order")
					var oneByOne = body
					for _, e := range shuffled {
						oneByOne, err = rr.ReplaceToolResults(oneByOne, []conv.ResultEdit{e})
						require.NoError(t, err)
					}
					require.Equal(t, string(out), string(oneByOne), "edits one by one")
				}
				// A position that is not a tool result is an error, and the
				// body is not changed.
				for i, m := range before.Messages {
					for j, b := range m.Blocks {
						if b.Kind == conv.BlockToolResult {
							continue
						}
						edits := append(slices.Clone(all[:1]), conv.ResultEdit{Msg: i, Block: j, Text: "x"})
						orig := slices.Clone(body)
						out, err := rr.ReplaceToolResults(body, edits)
						require.Error(t, err, "message %d block %d is %s", i, j, b.Kind)
						require.Nil(t, out)
						require.Equal(t, orig, body)
					}
				}
			}
		})
	}
}

func FuzzReplaceToolResults(f *testing.F) {
	for i, api := range apis.All() {
		for _, body := range [][]byte{apitest.Fixture(f, api, "request.json"), apitest.LongConversation(f, api, 2)} {
			f.Add(uint8(i), body, uint8(2), uint8(0), "text")
			f.Add(uint8(i), body, uint8(3), uint8(1), "")
		}
	}
	f.Fuzz(func(t *testing.T, a uint8, body []byte, msg, block uint8, text string) {
		all := apis.All()
		api := all[int(a)%len(all)]
		rr := apitest.CodecFor(api).(rewrite.ResultReplacer)
		req, err := apitest.ParseUncached(api, body)
		if err != nil {
			return // outside the contract (ReplaceToolResults takes a parsed body)
		}
		isResult := int(msg) < len(req.Messages) && int(block) < len(req.Messages[msg].Blocks) &&
			req.Messages[msg].Blocks[block].Kind == conv.BlockToolResult
		orig := slices.Clone(body)
		out, err := rr.ReplaceToolResults(body, []conv.ResultEdit{{Msg: int(msg), Block: int(block), Text: text}})
		require.Equal(t, orig, body, "the input must not be modified")
		if !isResult {
			require.Error(t, err, "message %d block %d is not a tool result", msg, block)
			return
		}
		require.NoError(t, err)
		after, err := apitest.ParseUncached(api, out)
		require.NoError(t, err, "%s", out)
		require.Len(t, after.Messages, len(req.Messages))
		if utf8.ValidString(text) {
			require.True(t, showsText(after.Messages[msg].Blocks[block], text), "%s", out)
		}
	})
}

// BenchmarkReplaceToolResults replaces every result of a 100-round
// conversation in one call (one walk, one copy).
func BenchmarkReplaceToolResults(b *testing.B) {
	for _, api := range apis.All() {
		b.Run(api.Name, func(b *testing.B) {
			body := apitest.LongConversation(b, api, 100)
			req, err := apitest.ParseUncached(api, body)
			require.NoError(b, err)
			edits := resultPositions(req)
			for i := range edits {
				edits[i].Text = "elided"
			}
			rr := apitest.CodecFor(api).(rewrite.ResultReplacer)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := rr.ReplaceToolResults(body, edits); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
