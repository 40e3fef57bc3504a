package rewrite_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

func TestHashElementLeavesOutCacheControl(t *testing.T) {
	plain := `{"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":"there"}]}`
	for name, tc := range map[string]struct {
		raw  string
		same bool
	}{
		"identical":         {plain, true},
		"last member":       {`{"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":"there","cache_control":{"type":"ephemeral"}}]}`, true},
		"first member":      {`{"role":"user","content":[{"cache_control":{"type":"ephemeral"},"type":"text","text":"hi"},{"type":"text","text":"there"}]}`, true},
		"middle, spaced":    {`{"role":"user","content":[{"type":"text", "cache_control" : {"type":"ephemeral","ttl":"1h"} ,"text":"hi"},{"type":"text","text":"there"}]}`, false},
		"two blocks":        {`{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}},{"type":"text","text":"there","cache_control":{"type":"ephemeral"}}]}`, true},
		"message level":     {`{"role":"user","cache_control":{"type":"ephemeral"},"content":[{"type":"text","text":"hi"},{"type":"text","text":"there"}]}`, true},
		"text changed":      {`{"role":"user","content":[{"type":"text","text":"hi!"},{"type":"text","text":"there"}]}`, false},
		"in a string":       {`{"role":"user","content":[{"type":"text","text":"hi \"cache_control\":1"},{"type":"text","text":"there"}]}`, false},
		"as a string value": {`{"role":"user","content":[{"type":"text","text":"cache_control"},{"type":"text","text":"there"}]}`, false},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.same, rewrite.HashElement(tc.raw) == rewrite.HashElement(plain))
		})
	}
	// Whitespace around a breakpoint stays part of the bytes; agents send
	// compact JSON.
	require.Equal(t, rewrite.HashElement(`{"type":"text" , "text":"hi"}`),
		rewrite.HashElement(`{"type":"text", "cache_control" : {"type":"ephemeral"} , "text":"hi"}`))
}

func TestHashHistory(t *testing.T) {
	body := []byte(`{"model":"m","messages":[ {"role":"user","content":"a"}, {"role":"assistant","content":"b"} ],"max_tokens":5}`)
	var h rewrite.History
	rewrite.HashHistory(&h, body, "messages")
	require.Len(t, h.Hashes, 2)
	require.Equal(t, `{"role":"user","content":"a"}`, string(body[h.Starts[0]:h.Starts[0]+29]))
	require.Equal(t, byte('{'), body[h.Starts[1]])
	require.Equal(t, byte(']'), body[h.End])
	require.NotEqual(t, h.Hashes[0], h.Hashes[1])

	rewrite.HashHistory(&h, []byte(`{"input":"just text"}`), "input")
	require.Len(t, h.Hashes, 1, "a string conversation is one element")
	require.Equal(t, 9, h.Starts[0])

	rewrite.HashHistory(&h, []byte(`{"messages":[]}`), "messages")
	require.Empty(t, h.Hashes)
	require.Equal(t, 13, h.End)

	rewrite.HashHistory(&h, []byte(`{"contents":[]}`), "messages")
	require.Empty(t, h.Hashes)
	require.Equal(t, -1, h.End)
	rewrite.HashHistory(&h, []byte(`[1,2]`), "messages")
	require.Equal(t, -1, h.End)
}

func FuzzHashHistory(f *testing.F) {
	f.Add(`{"role":"user","content":"a"}`, "x")
	f.Add(`{"cache_control":{"type":"ephemeral"}}`, `"cache_control":`)
	f.Add(`"cache_control"`, `\"`)
	f.Fuzz(func(t *testing.T, elem, text string) {
		body := `{"messages":[` + elem + `]}`
		if !gjson.Valid(body) {
			return
		}
		var h rewrite.History
		rewrite.HashHistory(&h, []byte(body), "messages") // never panics
		for _, s := range h.Starts {
			require.Less(t, s, len(body))
		}
		// Against a body sharing a prefix, HashHistoryLike agrees.
		other := `{"messages":[` + elem + `,` + elem + `]}`
		var ref, like rewrite.History
		rewrite.HashHistory(&ref, []byte(other), "messages")
		rewrite.HashHistoryLike(&like, []byte(body), "messages", &ref, []byte(other))
		require.Equal(t, h, like)
		// And against one whose conversation starts elsewhere.
		moved := `{"model":` + string(gjsonQuote(text)) + `,"messages":[` + elem + `,` + elem + `]}`
		var movedRef rewrite.History
		rewrite.HashHistory(&movedRef, []byte(moved), "messages")
		like = rewrite.History{}
		rewrite.HashHistoryLike(&like, []byte(body), "messages", &movedRef, []byte(moved))
		require.Equal(t, h, like, "%s vs %s", body, moved)
		// In place, the same.
		rewrite.HashHistoryShared(&ref, []byte(body), "messages", &ref, []byte(other), rewrite.CommonPrefix([]byte(body), []byte(other)))
		sameHistory(t, h, ref)
		// A breakpoint added to an object leaves its hash as it was.
		q := string(gjsonQuote(text))
		plain := `{"text":` + q + `}`
		marked := `{"text":` + q + `,"cache_control":{"type":"ephemeral"}}`
		require.Equal(t, rewrite.HashElement(plain), rewrite.HashElement(marked))
	})
}

func gjsonQuote(s string) []byte { return []byte(fmt.Sprintf("%q", strings.ToValidUTF8(s, "?"))) }

// TestHashHistoryLike: whatever the two bodies share, the result equals
// HashHistory's.
func TestHashHistoryLike(t *testing.T) {
	const a, b, c = `{"role":"user","content":"a"}`, `{"role":"assistant","content":"b"}`, `{"role":"user","content":"c"}`
	body := func(msgs ...string) []byte {
		return []byte(`{"model":"m","messages":[` + strings.Join(msgs, ",") + `]}`)
	}
	for name, pair := range map[string][2][]byte{
		"identical":      {body(a, b, c), body(a, b, c)},
		"last differs":   {body(a, b, c), body(a, b, `{"role":"user","content":"c!"}`)},
		"one more":       {body(a, b, c), body(a, b)},
		"one fewer":      {body(a, b), body(a, b, c)},
		"first differs":  {body(a, b), body(c, b)},
		"model differs":  {[]byte(`{"model":"x","messages":[` + a + `]}`), body(a)},
		"empty":          {body(), body(a)},
		"text appended":  {body(a, `{"role":"user","content":"cc"}`), body(a, c)},
		"string input":   {[]byte(`{"input":"x"}`), []byte(`{"input":"y"}`)},
		"same string":    {[]byte(`{"input":"x"}`), []byte(`{"input":"x"}`)},
		"string vs list": {[]byte(`{"input":"x"}`), []byte(`{"input":[` + a + `]}`)},
		// The conversation moved: text added or removed before it.
		"moved, same":          {body(a, b, c), []byte(`{"model":"longer name","messages":[` + a + `,` + b + `,` + c + `]}`)},
		"moved back":           {[]byte(`{"model":"longer name","tools":[],"messages":[` + a + `,` + b + `]}`), body(a, b, c)},
		"moved, last differs":  {body(a, b, `{"role":"user","content":"c!"}`), []byte(`{"model":"mm","messages":[` + a + `,` + b + `,` + c + `]}`)},
		"moved, first differs": {body(c, b), []byte(`{"model":"mm","messages":[` + a + `,` + b + `]}`)},
		"moved, spaced":        {body(a, b), []byte(`{"model":"mm", "messages": [ ` + a + ` , ` + b + ` ] }`)},
	} {
		t.Run(name, func(t *testing.T) {
			key := "messages"
			if strings.Contains(string(pair[0]), "input") {
				key = "input"
			}
			var ref, want, got rewrite.History
			rewrite.HashHistory(&ref, pair[1], key)
			rewrite.HashHistory(&want, pair[0], key)
			rewrite.HashHistoryLike(&got, pair[0], key, &ref, pair[1])
			require.Equal(t, want, got)
			// In place: ref extended into the new body's hashes.
			rewrite.HashHistoryShared(&ref, pair[0], key, &ref, pair[1], rewrite.CommonPrefix(pair[0], pair[1]))
			sameHistory(t, want, ref)
		})
	}
}

// CommonPrefix agrees with a byte-by-byte comparison wherever the bodies
// differ and whatever their lengths (block, word and byte boundaries).
func TestCommonPrefixAnyDifference(t *testing.T) {
	a := make([]byte, 9000)
	for i := range a {
		a[i] = byte('a' + i%23)
	}
	naive := func(x, y []byte) int {
		i := 0
		for i < len(x) && i < len(y) && x[i] == y[i] {
			i++
		}
		return i
	}
	for _, n := range []int{0, 1, 7, 8, 9, 63, 64, 65, 4095, 4096, 4097, 8191, 8192, 9000} {
		for _, at := range []int{0, 1, 7, 8, 63, 64, 100, 4095, 4096, 4160, 4167, 8191, 8999} {
			b := append([]byte(nil), a[:n]...)
			if at < n {
				b[at] ^= 0x20
			}
			require.Equal(t, naive(a, b), rewrite.CommonPrefix(a, b), "len %d, difference at %d", n, at)
			require.Equal(t, naive(b, a), rewrite.CommonPrefix(b, a), "len %d, difference at %d", n, at)
		}
	}
}

func FuzzCommonPrefix(f *testing.F) {
	f.Add([]byte("abcdefghijklmnop"), 3, byte(1))
	f.Fuzz(func(t *testing.T, a []byte, at int, flip byte) {
		b := append([]byte(nil), a...)
		if len(b) > 0 && flip != 0 {
			at = (at%len(b) + len(b)) % len(b)
			b[at] ^= flip
		}
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		if got := rewrite.CommonPrefix(a, b); got != i {
			t.Fatalf("CommonPrefix = %d, byte by byte %d", got, i)
		}
	})
}

// sameHistory requires equal histories, an empty slice as good as nil.
func sameHistory(t *testing.T, want, got rewrite.History) {
	t.Helper()
	require.True(t, slices.Equal(want.Hashes, got.Hashes), "hashes %v, want %v", got.Hashes, want.Hashes)
	require.True(t, slices.Equal(want.Starts, got.Starts), "starts %v, want %v", got.Starts, want.Starts)
	require.Equal(t, want.End, got.End)
}

// FuzzHashHistoryIndexed: from the validator's index, the same history as
// walking the body, whatever the elements and the members around them.
func FuzzHashHistoryIndexed(f *testing.F) {
	f.Add(`{"role":"user","content":"a"}`, `{"cache_control":{"type":"ephemeral"},"x":"\"cache_control\""}`, "messages", " ")
	f.Add(`"cache_control"`, `[1, {"cache_control" : 2}]`, `messag\u0065s`, "\n")
	f.Add(`{"a":"x\"cache_control"}`, `{}`, "input", "")
	f.Fuzz(func(t *testing.T, e1, e2, otherKey, space string) {
		if strings.Trim(space, " \t\r\n") != "" {
			space = " "
		}
		for _, body := range []string{
			`{"messages":[` + space + e1 + space + `,` + e2 + space + `]` + space + `}`,
			`{"model":"m",` + `"` + otherKey + `":[` + e2 + `],"messages":[` + e1 + `]}`,
			`{"messages":` + space + `[]}`,
			`{"messages":"text"}`,
			`{"messages":[` + e1 + `],"messages":[` + e2 + `]}`,
		} {
			idx, ok := jsonkit.ValidIndexed([]byte(body))
			if !ok {
				continue
			}
			var want, got rewrite.History
			rewrite.HashHistory(&want, []byte(body), "messages")
			rewrite.HashHistoryIndexed(&got, []byte(body), "messages", idx)
			require.Equal(t, want, got, "%s", body)
		}
	})
}

// TestHashHistoryIndexed: the index's spans give HashHistory's history,
// breakpoints left out; a body the index does not cover is walked.
func TestHashHistoryIndexed(t *testing.T) {
	body := []byte(`{"model":"m","messages":[ {"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]} , {"role":"assistant","content":"b"} ],"max_tokens":5}`)
	idx, ok := jsonkit.ValidIndexed(body)
	require.True(t, ok)
	var want, got rewrite.History
	rewrite.HashHistory(&want, body, "messages")
	rewrite.HashHistoryIndexed(&got, body, "messages", idx)
	require.Len(t, got.Hashes, 2)
	require.Equal(t, want, got)
	copied := slices.Clone(body)
	rewrite.HashHistoryIndexed(&got, copied, "messages", idx) // another array: walked
	require.Equal(t, want, got)
}
