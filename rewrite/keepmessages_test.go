package rewrite_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
)

// KeepMessages gives the view of leaving the other messages out one by one
// with ReplaceMessages (from the front), for every API, and kept elements
// keep their bytes.
func TestKeepMessagesMatchesOneByOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, api := range apis.All() {
		t.Run(api.Name, func(t *testing.T) {
			tc := apitest.CodecFor(api).(rewrite.TurnCodec)
			loc, ok := tc.(rewrite.MessageLocator)
			require.True(t, ok, "%s's TurnCodec implements rewrite.MessageLocator", api.Name)
			for _, body := range [][]byte{apitest.Fixture(t, api, "request.json"), apitest.LongConversation(t, api, 6)} {
				req, err := apitest.ParseUncached(api, body)
				require.NoError(t, err)
				n := len(req.Messages)
				for trial := range 40 {
					// A prefix left out, as DropBefore does, or (odd trials)
					// any subset with the last message kept.
					drop := rng.IntN(n)
					keep := func(i int) bool { return i >= drop || req.Messages[i].Role == conv.RoleSystem }
					if trial%2 == 1 {
						set := make([]bool, n)
						for i := range set {
							set[i] = i == n-1 || rng.IntN(2) == 0
						}
						keep = func(i int) bool { return set[i] }
					}
					out, err := apitest.CheckTurn(t, body, func(b []byte) ([]byte, error) { return rewrite.KeepMessages(b, loc, n, keep) })
					require.NoError(t, err)
					// The elements of the kept messages, in order, byte for byte.
					elems, ranges, err := loc.MessageElems(body)
					require.NoError(t, err)
					var wantRaw, gotRaw []string
					var kept []conv.Message
					for i, r := range ranges {
						if keep(i) {
							kept = append(kept, req.Messages[i])
							for _, e := range elems[r[0]:r[1]] {
								wantRaw = append(wantRaw, e.Raw)
							}
						}
					}
					key := tc.(rewrite.UserTurnLocator).ConversationKey()
					for _, e := range gjson.GetBytes(out, key).Array() {
						gotRaw = append(gotRaw, e.Raw)
					}
					require.Equal(t, wantRaw, gotRaw)
					if trial%2 == 1 {
						continue
					}
					// A prefix left out: the view is that of the kept messages
					// (a result's tool name comes from its call, which may be
					// gone), and the same as leaving them out one by one.
					got, err := apitest.ParseUncached(api, out)
					require.NoError(t, err)
					require.Equal(t, withoutResultNames(kept), withoutResultNames(got.Messages), "drop %d", drop)
					ref, removed := body, 0
					for i := range n {
						if !keep(i) {
							ref, err = tc.ReplaceMessages(ref, i-removed, nil)
							require.NoError(t, err)
							removed++
						}
					}
					want, err := apitest.ParseUncached(api, ref)
					require.NoError(t, err)
					require.Equal(t, apitest.StripDigests(t, want.Messages), apitest.StripDigests(t, got.Messages))
				}
			}
		})
	}
}

func TestKeepMessagesErrors(t *testing.T) {
	api := apis.All()[0]
	body := apitest.LongConversation(t, api, 2)
	loc := apitest.CodecFor(api).(rewrite.MessageLocator)
	_, err := rewrite.KeepMessages(body, loc, 5, func(int) bool { return true })
	require.ErrorContains(t, err, "6 messages located, the view has 5")
	_, err = rewrite.KeepMessages(body, loc, 6, func(int) bool { return false })
	require.Error(t, err)
	out, err := rewrite.KeepMessages(body, loc, 6, func(int) bool { return true })
	require.NoError(t, err)
	require.Equal(t, body, out)
}

// withoutResultNames copies msgs without digests and without the tool
// names of result blocks.
func withoutResultNames(msgs []conv.Message) []conv.Message {
	out := make([]conv.Message, len(msgs))
	for i, m := range msgs {
		m.Digest = nil
		m.Blocks = append([]conv.Block(nil), m.Blocks...)
		for j := range m.Blocks {
			if m.Blocks[j].Kind == conv.BlockToolResult {
				m.Blocks[j].ToolName = ""
			}
		}
		out[i] = m
	}
	return out
}

func FuzzKeepMessages(f *testing.F) {
	for i, api := range apis.All() {
		f.Add(uint8(i), apitest.Fixture(f, api, "request.json"), uint64(0b10110))
		f.Add(uint8(i), apitest.LongConversation(f, api, 2), uint64(0b1))
	}
	f.Fuzz(func(t *testing.T, a uint8, body []byte, mask uint64) {
		all := apis.All()
		api := all[int(a)%len(all)]
		loc := apitest.CodecFor(api).(rewrite.MessageLocator)
		req, err := apitest.ParseUncached(api, body)
		if err != nil || len(req.Messages) == 0 {
			return // outside the contract (KeepMessages takes a parsed body)
		}
		n := len(req.Messages)
		keep := func(i int) bool { return i == n-1 || mask&(1<<(i%64)) != 0 }
		out, err := rewrite.KeepMessages(body, loc, n, keep)
		if err != nil {
			return // a conversation the locator cannot split (a string input)
		}
		after, err := apitest.ParseUncached(api, out)
		require.NoError(t, err, "%s", out)
		kept := 0
		for i := range n {
			if keep(i) {
				kept++
			}
		}
		require.LessOrEqual(t, len(after.Messages), kept)
		require.NotEmpty(t, after.Messages)
	})
}
