package rewrite_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
	"github.com/stretchr/testify/require"
)

type arrItem struct {
	Elem string
	Raw  string
	Err  bool
}

// readArray reads every item, checking that the raws reproduce the input.
func readArray(t testing.TB, r io.Reader, in string, opts ...rewrite.ReaderOption) ([]arrItem, error) {
	a := rewrite.NewJSONArrayReader(r, opts...)
	var out []arrItem
	var raw []byte
	for range 100000 {
		elem, rw, err := a.Next()
		raw = append(raw, rw...)
		if err == io.EOF {
			require.Nil(t, elem)
			require.Nil(t, rw)
			if in != "" {
				require.Equal(t, in, string(raw), "raw must reproduce the input")
			}
			return out, nil
		}
		if err != nil && !errorsIsMalformed(err) {
			return out, err
		}
		out = append(out, arrItem{Elem: string(elem), Raw: string(rw), Err: err != nil})
	}
	t.Fatal("reader does not terminate")
	return nil, nil
}

func errorsIsMalformed(err error) bool { return errors.Is(err, rewrite.ErrMalformedReply) }

func TestJSONArrayReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []arrItem
	}{
		{"empty input", "", nil},
		{"empty array", "[]", []arrItem{{Raw: "[]"}}},
		{"empty array spaced", " [ \n] \n", []arrItem{{Raw: " [ \n]"}, {Raw: " \n"}}},
		{"gemini framing", "[{\"a\":1}\n,\r\n{\"b\":2}\n]", []arrItem{
			{Elem: `{"a":1}`, Raw: `[{"a":1}`},
			{Elem: `{"b":2}`, Raw: "\n,\r\n{\"b\":2}"},
			{Raw: "\n]"},
		}},
		{"tricky strings", `[{"t":"]}[{,\"x"},{"u":"\\"}]`, []arrItem{
			{Elem: `{"t":"]}[{,\"x"}`, Raw: `[{"t":"]}[{,\"x"}`},
			{Elem: `{"u":"\\"}`, Raw: `,{"u":"\\"}`},
			{Raw: "]"},
		}},
		{"nested and scalars", `[[1,[2]], "s]", 3 ,true,null]`, []arrItem{
			{Elem: `[1,[2]]`, Raw: `[[1,[2]]`},
			{Elem: `"s]"`, Raw: `, "s]"`},
			{Elem: `3`, Raw: `, 3`},
			{Elem: `true`, Raw: ` ,true`},
			{Elem: `null`, Raw: `,null`},
			{Raw: "]"},
		}},
		{"not an array", `{"a":1}`, []arrItem{{Raw: `{"a":1}`, Err: true}}},
		{"truncated", `[{"a":1},{"b"`, []arrItem{
			{Elem: `{"a":1}`, Raw: `[{"a":1}`},
			{Raw: `,{"b"`, Err: true},
		}},
		{"trailing comma", `[{"a":1},]`, []arrItem{
			{Elem: `{"a":1}`, Raw: `[{"a":1}`},
			{Raw: `,]`, Err: true},
		}},
		{"garbage after", `[1] x`, []arrItem{
			{Elem: `1`, Raw: `[1`},
			{Raw: `]`},
			{Raw: ` x`, Err: true},
		}},
		{"unclosed scalar", `[1`, []arrItem{{Raw: `[1`, Err: true}}},
	}
	for _, tt := range tests {
		for how, mk := range apitest.Readers(tt.in) {
			t.Run(tt.name+"/"+how, func(t *testing.T) {
				got, err := readArray(t, mk(), tt.in)
				require.NoError(t, err)
				if how == "whole" || how == "data-err" {
					require.Equal(t, tt.want, got)
					return
				}
				// After a syntax error the rest of the input comes in
				// chunks as it is read; compare joined.
				require.Equal(t, joinItems(tt.want), joinItems(got))
			})
		}
	}
}

// joinItems merges the error tail into one item so chunkings compare equal.
func joinItems(items []arrItem) []arrItem {
	var out []arrItem
	for _, it := range items {
		if n := len(out); n > 0 && it.Err && out[n-1].Err {
			out[n-1].Raw += it.Raw
			continue
		}
		out = append(out, it)
	}
	return out
}

func TestJSONArrayReaderMaxSize(t *testing.T) {
	in := `[{"a":1},{"b":"` + strings.Repeat("x", 100) + `"}]`
	a := rewrite.NewJSONArrayReader(strings.NewReader(in), rewrite.WithMaxEventSize(32))
	elem, _, err := a.Next()
	require.NoError(t, err)
	require.Equal(t, `{"a":1}`, string(elem))
	_, _, err = a.Next()
	require.ErrorIs(t, err, rewrite.ErrEventTooLarge)
	_, _, err = a.Next()
	require.ErrorIs(t, err, rewrite.ErrEventTooLarge)
}

func TestJSONArrayReaderLarge(t *testing.T) {
	var in strings.Builder
	in.WriteString("[")
	for i := range 40 {
		if i > 0 {
			in.WriteString(",\r\n")
		}
		in.WriteString(`{"i":"` + strings.Repeat("\\\"", i*300) + `"}`)
	}
	in.WriteString("]")
	for how, mk := range apitest.Readers(in.String()) {
		t.Run(how, func(t *testing.T) {
			got, err := readArray(t, mk(), in.String())
			require.NoError(t, err)
			require.Len(t, got, 41)
		})
	}
}

func FuzzJSONArrayReader(f *testing.F) {
	for _, s := range []string{`[{"a":1}` + "\n,\r\n" + `{"b":"]"}]`, `[]`, `[1,"x",[2]]`, `[{"a":"\\"}`, ` [ ] `, `[,]`} {
		f.Add([]byte(s), int64(1))
	}
	f.Fuzz(func(t *testing.T, in []byte, seed int64) {
		whole, err := readArray(t, bytes.NewReader(in), string(in))
		require.NoError(t, err)
		chunked, err := readArray(t, apitest.NewChunkReader(in, seed), string(in))
		require.NoError(t, err)
		require.Equal(t, joinItems(whole), joinItems(chunked))
	})
}
