package rewrite

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// agCase is one table case of a TurnCodec body edit: run gives the output
// for body; want is the exact expected output, or err a substring of the
// expected error.
type agCase struct {
	name string
	body string
	run  func(body []byte) ([]byte, error)
	want string
	err  string
}

// agRunCases runs body-edit cases, checking on success that the output is
// exactly want, valid JSON, deterministic, and does not alias the input
// (the input is overwritten afterwards), and that the input is untouched.
func agRunCases(t *testing.T, cases []agCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.body)
			out, err := tt.run(body)
			if tt.err != "" {
				require.Error(t, err)
				require.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.body, string(body), "input modified")
			require.Equal(t, tt.want, string(out))
			require.True(t, gjson.ValidBytes(out), "invalid JSON:\n%s", out)
			again, err := tt.run([]byte(tt.body))
			require.NoError(t, err)
			require.Equal(t, out, again, "not deterministic")
			if tt.want != tt.body { // a no-op may return its input itself
				kept := string(out)
				scribble(body)
				require.Equal(t, kept, string(out), "output aliases the input")
			}
		})
	}
}

// agScribbleItems overwrites items, as a reused buffer would be.
func agScribbleItems(items [][]byte) {
	for _, it := range items {
		scribble(it)
	}
}

func TestAgReorder(t *testing.T) {
	body := []byte("[ 1,\n  2 , 3,4 ]")
	arr, _ := agRootArray(body)
	elems := agElems(arr)
	for _, tt := range []struct {
		order []int
		want  string
	}{
		{[]int{0, 1, 2, 3}, "[ 1,\n  2 , 3,4 ]"},
		{[]int{0, 2, 3}, "[ 1,\n  3 , 4 ]"},
		{[]int{3, 2, 1, 0}, "[ 4,\n  3 , 2,1 ]"},
		{[]int{1}, "[ 2 ]"},
		{nil, "[  ]"},
	} {
		out := agReorder(body, elems, tt.order)
		require.Equal(t, tt.want, string(out), tt.order)
	}
	require.Equal(t, "[ 1,\n  2 , 3,4 ]", string(body))
}

// agRootArray returns the top-level array of b with offsets into b.
func agRootArray(b []byte) (gjson.Result, bool) {
	r := gjson.ParseBytes(b)
	r.Index = bytes.IndexByte(b, '[')
	return r, r.IsArray()
}

func TestAgCallOrder(t *testing.T) {
	// Elements: 0 text, 1 call0, 2 text, 3 call1, 4 call2.
	calls := []int{1, 3, 4}
	for _, tt := range []struct {
		remove, first []int
		want          []int
		left          int
		err           string
	}{
		{nil, nil, []int{0, 1, 2, 3, 4}, 3, ""},
		{[]int{1}, nil, []int{0, 1, 2, 4}, 2, ""},
		{nil, []int{2}, []int{0, 4, 1, 2, 3}, 3, ""},
		{nil, []int{2, 1}, []int{0, 4, 3, 1, 2}, 3, ""},
		{[]int{0}, []int{2}, []int{0, 4, 2, 3}, 2, ""},
		{[]int{0, 1, 2}, nil, []int{0, 2}, 0, ""},
		{[]int{1, 1}, []int{1, 2, 2}, []int{0, 4, 1, 2}, 2, ""}, // duplicates; remove wins
		{[]int{3}, nil, nil, 0, "out of range"},
		{nil, []int{-1}, nil, 0, "out of range"},
	} {
		order, left, err := agCallOrder(5, calls, tt.remove, tt.first)
		if tt.err != "" {
			require.ErrorContains(t, err, tt.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tt.want, order, "remove %v first %v", tt.remove, tt.first)
		require.Equal(t, tt.left, left)
	}
}

func TestAgJoinItems(t *testing.T) {
	out, err := agJoinItems([][]byte{[]byte(`{"a":1}`), []byte(` {"b":2} `)})
	require.NoError(t, err)
	require.Equal(t, `{"a":1}, {"b":2} `, string(out))
	_, err = agJoinItems([][]byte{[]byte(`{"a":`)})
	require.ErrorContains(t, err, "not valid JSON")
	_, err = agJoinItems([][]byte{[]byte(`[1]`)})
	require.ErrorContains(t, err, "not a JSON object")
	_, err = agJoinItems([][]byte{nil})
	require.Error(t, err)
	require.True(t, strings.HasPrefix(agInner(gjson.Parse(`[ 1 , 2 ]`)), "1 , 2"))
	require.Equal(t, "", agInner(gjson.Parse(`[ ]`)))
}

// agSeedTurn seeds a TurnCodec fuzz test with api's fixtures and the given
// small bodies and replies.
func agSeedTurn(f *testing.F, api *Descriptor, bodies, replies []string) {
	body, err := fixtures.ReadFile("testdata/" + api.Name + "/request.json")
	if err != nil {
		f.Fatal(err)
	}
	reply, err := fixtures.ReadFile("testdata/" + api.Name + "/reply.json")
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

// agFuzzTurn runs every TurnCodec method of api on a fuzzed body and reply:
// none may panic or modify its input, and on a valid input a success gives
// valid JSON that parses again.
func agFuzzTurn(t *testing.T, api *Descriptor, body, reply []byte, p uint8, text string, rm, mv uint8) {
	c, tc := codecFor(api), codecFor(api)
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
		require.Equal(t, agExpectCalls(before.ToolCalls, remove, first), agCallNames(after.ToolCalls), "EditReply:\n%s", out)
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

// agCallNames lists calls as "name args" strings in order.
func agCallNames(calls []conv.ToolCall) []string {
	out := []string{}
	for _, c := range calls {
		out = append(out, c.ID+" "+c.Name+" "+string(c.Args))
	}
	return out
}

// agExpectCalls is what EditReply should leave of calls: the moved ones
// first (in order, once, unless removed), then the others not removed.
func agExpectCalls(calls []conv.ToolCall, remove, first []int) []string {
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
	return agCallNames(order)
}
