// Package apitest holds the helpers the tests of the wire API packages
// (rewrite/<api>) and the cross-API tests (package rewrite_test, which
// iterate rewrite/apis) share: fixtures from rewrite/testdata/<api>/, a
// codec parsing through a shared view cache, stream decoding in every
// chunking, the properties every edit must have, the table runner and fuzz
// body of TurnCodec edits, and the checks each API runs on its own table of
// error shapes, terminal events, side requests and client rewrites. It is
// imported by tests only.
package apitest

import (
	"bytes"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// testdataDir is rewrite/testdata, found from this file's own path so that
// tests in any package under rewrite/ read the same fixtures.
var testdataDir = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata")
}()

// Fixture returns rewrite/testdata/<api>/<name>.
func Fixture(t testing.TB, api *rewrite.Descriptor, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdataDir, api.Name, name))
	require.NoError(t, err)
	return b
}

// Views is the view cache the tests' codecs parse through.
var Views = rewrite.NewViewCache(rewrite.DefaultViewCacheBytes)

// CodecFor returns api's codec parsing through Views.
func CodecFor(api *rewrite.Descriptor) rewrite.Codec { return api.NewCodec(Views) }

// DecodeSSE decodes a whole SSE stream with a fresh decoder, reading it in
// every chunking; it checks that all readings agree and returns the events
// and the accumulated reply.
func DecodeSSE(t *testing.T, c rewrite.Codec, stream []byte) ([]rewrite.StreamEvent, *conv.Reply) {
	t.Helper()
	var first []rewrite.StreamEvent
	var firstReply *conv.Reply
	for how, mk := range Readers(string(stream)) {
		rd := rewrite.NewReader(mk())
		dec := c.NewStreamDecoder()
		var acc rewrite.StreamAccumulator
		var all []rewrite.StreamEvent
		for {
			ev, err := rd.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err, how)
			evs, err := dec.Decode(ev)
			require.NoError(t, err, how)
			acc.Add(evs...)
			all = append(all, evs...)
		}
		if first == nil {
			first, firstReply = all, acc.Reply()
			continue
		}
		require.Equal(t, first, all, "decoding must not depend on chunking (%s)", how)
		require.Equal(t, firstReply, acc.Reply(), how)
	}
	return first, firstReply
}

// Kinds lists the Kinds of events, for compact assertions.
func Kinds(evs []rewrite.StreamEvent) []rewrite.EventKind {
	out := make([]rewrite.EventKind, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

// IsSubsequence reports whether every byte of a appears in b in order: what
// an edit made only of insertions leaves behind.
func IsSubsequence(a, b []byte) bool {
	i := 0
	for j := 0; i < len(a) && j < len(b); j++ {
		if a[i] == b[j] {
			i++
		}
	}
	return i == len(a)
}

// CheckEdit applies e to body and checks the properties every edit has:
// valid JSON out, deterministic, body untouched, the result parses, and
// (without an output limit change) the original bytes all kept in order.
func CheckEdit(t testing.TB, c rewrite.Codec, body []byte, e conv.RequestEdits) []byte {
	t.Helper()
	orig := append([]byte(nil), body...)
	out, err := c.ApplyEdits(body, e)
	require.NoError(t, err)
	require.Equal(t, orig, body, "ApplyEdits must not modify its input")
	require.True(t, gjson.ValidBytes(out), "invalid JSON:\n%s", out)
	again, err := c.ApplyEdits(body, e)
	require.NoError(t, err)
	require.Equal(t, out, again, "ApplyEdits must be deterministic")
	if e.SetMaxOutputTokens == 0 {
		// A JSON null an edit fills in is the only thing that may go.
		kept := bytes.ReplaceAll(body, []byte("null"), nil)
		require.True(t, IsSubsequence(kept, out), "original bytes must stay in order:\n%s", out)
	}
	_, err = c.ParseRequest(out)
	require.NoError(t, err, "edited body must parse:\n%s", out)
	return out
}

// StripDigests checks that every message's Digest (when the view cache set
// one) is the digest of the message as parsed, and returns the messages
// without it, for comparison with literal expected views.
func StripDigests(t *testing.T, msgs []conv.Message) []conv.Message {
	t.Helper()
	out := make([]conv.Message, len(msgs))
	for i, m := range msgs {
		m.Digest = nil
		if msgs[i].Digest != nil {
			require.Equal(t, conv.MessageDigest(&m), msgs[i].Digest, "digest of message %d", i)
		}
		out[i] = m
	}
	return out
}

// chunkReader returns its input in random-sized chunks.
type chunkReader struct {
	data []byte
	rng  *rand.Rand
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1 + c.rng.Intn(min(len(c.data), 17))
	n = copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// NewChunkReader returns data in random-sized chunks (1 to 17 bytes),
// the sizes drawn from seed.
func NewChunkReader(data []byte, seed int64) io.Reader {
	return &chunkReader{data: data, rng: rand.New(rand.NewSource(seed))}
}

// Readers returns the ways every stream test feeds its input.
func Readers(in string) map[string]func() io.Reader {
	return map[string]func() io.Reader{
		"whole":    func() io.Reader { return strings.NewReader(in) },
		"one-byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(in)) },
		"half":     func() io.Reader { return iotest.HalfReader(strings.NewReader(in)) },
		"data-err": func() io.Reader { return iotest.DataErrReader(strings.NewReader(in)) },
		"random-1": func() io.Reader { return &chunkReader{data: []byte(in), rng: rand.New(rand.NewSource(1))} },
		"random-2": func() io.Reader { return &chunkReader{data: []byte(in), rng: rand.New(rand.NewSource(2))} },
		"random-3": func() io.Reader { return &chunkReader{data: []byte(in), rng: rand.New(rand.NewSource(3))} },
	}
}

// Scribble overwrites b, as a recycled request buffer would be.
func Scribble(b []byte) {
	for i := range b {
		b[i] = 'Z'
	}
}

// Case is one table case of a TurnCodec body edit: run gives the output
// for body; want is the exact expected output, or err a substring of the
// expected error.
type Case struct {
	Name string
	Body string
	Run  func(body []byte) ([]byte, error)
	Want string
	Err  string
}

// RunCases runs body-edit cases, checking on success that the output is
// exactly want, valid JSON, deterministic, and does not alias the input
// (the input is overwritten afterwards), and that the input is untouched.
func RunCases(t *testing.T, cases []Case) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			body := []byte(tt.Body)
			out, err := tt.Run(body)
			if tt.Err != "" {
				require.Error(t, err)
				require.Contains(t, err.Error(), tt.Err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.Body, string(body), "input modified")
			require.Equal(t, tt.Want, string(out))
			require.True(t, gjson.ValidBytes(out), "invalid JSON:\n%s", out)
			again, err := tt.Run([]byte(tt.Body))
			require.NoError(t, err)
			require.Equal(t, out, again, "not deterministic")
			if tt.Want != tt.Body { // a no-op may return its input itself
				kept := string(out)
				Scribble(body)
				require.Equal(t, kept, string(out), "output aliases the input")
			}
		})
	}
}

// ScribbleItems overwrites items, as a reused buffer would be.
func ScribbleItems(items [][]byte) {
	for _, it := range items {
		Scribble(it)
	}
}

// RootArray returns the top-level array of b with offsets into b.
func RootArray(b []byte) (gjson.Result, bool) {
	r := gjson.ParseBytes(b)
	r.Index = bytes.IndexByte(b, '[')
	return r, r.IsArray()
}

// SeedTurn seeds a TurnCodec fuzz test with api's fixtures and the given
// small bodies and replies.
func SeedTurn(f *testing.F, api *rewrite.Descriptor, bodies, replies []string) {
	body, err := os.ReadFile(filepath.Join(testdataDir, api.Name, "request.json"))
	if err != nil {
		f.Fatal(err)
	}
	reply, err := os.ReadFile(filepath.Join(testdataDir, api.Name, "reply.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(body, reply, uint8(2), "reminder", uint8(1), uint8(2))
	f.Add(body, reply, uint8(3), "x\"\n\xff", uint8(0), uint8(3))
	for i, b := range bodies {
		for j, r := range replies {
			f.Add([]byte(b), []byte(r), uint8(i+j), "t", uint8(j), uint8(i))
		}
	}
}

// FuzzTurn runs every TurnCodec method of api on a fuzzed body and reply:
// none may panic or modify its input, and on a valid input a success gives
// valid JSON that parses again.
func FuzzTurn(t *testing.T, api *rewrite.Descriptor, body, reply []byte, p uint8, text string, rm, mv uint8) {
	c, tc := CodecFor(api), CodecFor(api)
	origBody, origReply := bytes.Clone(body), bytes.Clone(reply)
	pos := int(p%8) - 1
	results := []conv.ToolResult{{CallID: "id" + text, Name: "n" + text, Content: text, IsError: rm&1 == 1}, {CallID: "c", Name: "m", Content: "r"}}
	_, perr := c.ParseRequest(body)
	checkReq := func(what string, out []byte, err error) {
		t.Helper()
		require.Equal(t, origBody, body, "%s modified its input", what)
		if perr != nil || err != nil {
			return
		}
		require.True(t, gjson.ValidBytes(out), "%s: invalid JSON out:\n%s", what, out)
		_, err = c.ParseRequest(out)
		require.NoError(t, err, "%s: output must parse:\n%s", what, out)
	}
	items, err := tc.ToolResultMessages(results)
	require.NoError(t, err)
	out, err := tc.ReplaceMessages(body, pos, items)
	checkReq("ReplaceMessages", out, err)
	out, err = tc.ReplaceMessages(body, pos, nil)
	checkReq("ReplaceMessages(nil)", out, err)
	out, err = tc.AppendMessages(body, items)
	checkReq("AppendMessages", out, err)
	out, err = tc.PrependToolResults(body, pos, results)
	checkReq("PrependToolResults", out, err)
	out, err = tc.AppendUserTextAt(body, pos, []string{text, "second"})
	checkReq("AppendUserTextAt", out, err)

	var remove, first []int
	for i := 0; i < 8; i++ {
		if rm&(1<<i) != 0 {
			remove = append(remove, i/2) // duplicates on purpose
		}
		if mv&(1<<i) != 0 {
			first = append([]int{i / 2}, first...)
		}
	}
	before, rerr := c.ParseReply(reply)
	valid := rerr == nil && gjson.ValidBytes(reply)
	out, err = tc.EditReply(reply, remove, first)
	require.Equal(t, origReply, reply, "EditReply modified its input")
	if valid && err == nil {
		require.True(t, gjson.ValidBytes(out), "EditReply: invalid JSON out:\n%s", out)
		after, err := c.ParseReply(out)
		require.NoError(t, err)
		require.Equal(t, ExpectCalls(before.ToolCalls, remove, first), CallNames(after.ToolCalls), "EditReply:\n%s", out)
		require.Equal(t, before.Text, after.Text)
	}
	out, err = tc.MergeReplies(reply, reply)
	require.Equal(t, origReply, reply, "MergeReplies modified its input")
	if valid && err == nil {
		require.True(t, gjson.ValidBytes(out), "MergeReplies: invalid JSON out:\n%s", out)
		after, err := c.ParseReply(out)
		require.NoError(t, err)
		require.Equal(t, before.Text+before.Text, after.Text)
		require.Len(t, after.ToolCalls, 2*len(before.ToolCalls))
	}
	msgs, err := tc.ReplyAsMessages(reply)
	if valid && err == nil {
		for _, m := range msgs {
			require.True(t, gjson.ValidBytes(m))
		}
	}
}

// Items converts strings to items.
func Items(items ...string) [][]byte {
	out := make([][]byte, len(items))
	for i, s := range items {
		out[i] = []byte(s)
	}
	return out
}

// Strings converts items to strings for comparison.
func Strings(items [][]byte) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
	}
	return out
}

// CallNames lists calls as "name args" strings in order.
func CallNames(calls []conv.ToolCall) []string {
	out := []string{}
	for _, c := range calls {
		out = append(out, c.ID+" "+c.Name+" "+string(c.Args))
	}
	return out
}

// ExpectCalls is what EditReply should leave of calls: the moved ones
// first (in order, once, unless removed), then the others not removed.
func ExpectCalls(calls []conv.ToolCall, remove, first []int) []string {
	gone := map[int]bool{}
	for _, i := range remove {
		gone[i] = true
	}
	var order []conv.ToolCall
	for _, i := range first {
		if !gone[i] {
			order = append(order, calls[i])
			gone[i] = true
		}
	}
	for i, c := range calls {
		if !gone[i] {
			order = append(order, c)
		}
	}
	return CallNames(order)
}

// Results are the tool results shepherd answers with in the TurnCodec tests.
var Results = []conv.ToolResult{
	{CallID: "s1", Name: "create_new_topic", Content: "ok"},
	{CallID: "s2", Name: "rm", Content: "blocked", IsError: true},
}

// CheckTurn runs a TurnCodec edit of in and checks the contract every one
// shares: the input is not modified, the output is valid JSON, the edit is
// deterministic, and the output does not alias the input. It returns the
// output, or the error (with a nil output).
func CheckTurn(t *testing.T, in []byte, edit func([]byte) ([]byte, error)) ([]byte, error) {
	t.Helper()
	orig := append([]byte(nil), in...)
	out, err := edit(in)
	require.Equal(t, orig, in, "the input must not be modified")
	if err != nil {
		return nil, err
	}
	require.True(t, gjson.ValidBytes(out), "invalid JSON:\n%s", out)
	again, err := edit(append([]byte(nil), orig...))
	require.NoError(t, err)
	require.Equal(t, out, again, "edits must be deterministic")
	if len(out) > 0 && len(in) > 0 && &out[0] == &in[0] {
		// A no-op edit may return its input itself, as ApplyEdits does.
		require.Equal(t, len(in), len(out))
		return out, nil
	}
	keep := append([]byte(nil), out...)
	for i := range in {
		in[i] = 'X'
	}
	require.Equal(t, keep, out, "the output must not alias the input")
	copy(in, orig)
	return out, nil
}

// CheckItemsOut checks items the same way: not aliasing the input.
func CheckItemsOut(t *testing.T, in []byte, convert func([]byte) ([][]byte, error)) ([][]byte, error) {
	t.Helper()
	orig := append([]byte(nil), in...)
	items, err := convert(in)
	require.Equal(t, orig, in, "the input must not be modified")
	if err != nil {
		return nil, err
	}
	keep := make([][]byte, len(items))
	for i, it := range items {
		require.True(t, gjson.ValidBytes(it), "invalid JSON item:\n%s", it)
		keep[i] = append([]byte(nil), it...)
	}
	for i := range in {
		in[i] = 'X'
	}
	require.Equal(t, keep, items, "items must not alias the input")
	copy(in, orig)
	return items, nil
}

// SeedOpenAITurn seeds a turn fuzzer with the API's fixtures and extra bodies.
func SeedOpenAITurn(f *testing.F, api *rewrite.Descriptor, extra ...string) {
	dir := filepath.Join(testdataDir, api.Name)
	ents, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		for pos := range 6 {
			f.Add(b, pos, "t\"\n")
		}
	}
	for _, s := range extra {
		for pos := range 6 {
			f.Add([]byte(s), pos, "x")
		}
	}
}

// FuzzOpenAITurn exercises every body and reply edit of c on body.
func FuzzOpenAITurn(t *testing.T, c rewrite.TurnCodec, body []byte, pos int, text string) {
	valid := false
	if _, err := c.(rewrite.Codec).ParseRequest(body); err == nil {
		valid = true
	}
	item := []byte(`{"role":"user","content":` + string(jsonkit.Quote(text)) + `}`)
	res := []conv.ToolResult{{CallID: "id" + text, Content: text, IsError: true}}
	check := func(out []byte, err error, what string) {
		if err == nil && valid {
			require.True(t, gjson.ValidBytes(out), "%s: invalid JSON:\n%s", what, out)
			_, err := c.(rewrite.Codec).ParseRequest(out)
			require.NoError(t, err, "%s: edited body must parse:\n%s", what, out)
		}
	}
	orig := append([]byte(nil), body...)
	out, err := c.ReplaceMessages(body, pos, [][]byte{item, item})
	check(out, err, "replace")
	out, err = c.ReplaceMessages(body, pos, nil)
	check(out, err, "remove")
	out, err = c.PrependToolResults(body, pos, res)
	check(out, err, "prepend")
	out, err = c.AppendUserTextAt(body, pos, []string{text, "second"})
	check(out, err, "user text")
	out, err = c.AppendMessages(body, [][]byte{item})
	check(out, err, "append")
	require.Equal(t, orig, body)

	replyValid := gjson.ValidBytes(body)
	for _, e := range [][2][]int{{{pos}, nil}, {nil, {pos}}, {{0, 1, 2, 3}, nil}, {{pos & 1}, {1 - pos&1}}} {
		out, err := c.EditReply(body, e[0], e[1])
		if err == nil && replyValid {
			require.True(t, gjson.ValidBytes(out), "edit reply %v: invalid JSON:\n%s", e, out)
		}
	}
	out, err = c.MergeReplies(body, body)
	if err == nil && replyValid {
		require.True(t, gjson.ValidBytes(out), "merge: invalid JSON:\n%s", out)
	}
	if items, err := c.ReplyAsMessages(body); err == nil {
		for _, it := range items {
			require.True(t, gjson.ValidBytes(it), "reply item: invalid JSON:\n%s", it)
		}
	}
	require.Equal(t, orig, body)
}

// ReadFixture returns rewrite/testdata/<api>/<name>, or the error reading
// it (for fixtures only some APIs have).
func ReadFixture(api *rewrite.Descriptor, name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(testdataDir, api.Name, name))
}
