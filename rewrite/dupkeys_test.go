package rewrite

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shepherd-proxy/shepherd/bench/workload"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

func TestCheckDuplicateKeys(t *testing.T) {
	many := func(n int, dup bool) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"k` + strings.Repeat("x", i) + `":1`)
		}
		if dup {
			b.WriteString(`,"kxxx":2`)
		}
		b.WriteString("}")
		return b.String()
	}
	cases := []struct {
		body string
		key  string // "" = accepted
	}{
		{`{"model":"a","messages":[],"stream":true}`, ""},
		{`{"model":"a","messages":[{"model":1,"model":2}]}`, ""}, // nested: not top level
		{`{"model":"a","model":"b"}`, "model"},
		{` { "messages" : [] , "x":{"messages":1}, "messages" : [{"role":"user"}] } `, "messages"},
		{`{"mod\u0065l":"a","model":"b"}`, "model"},
		{`{"stream":false,"stream":true}`, "stream"},
		{`{"a":"}\"","a":1}`, "a"},
		{many(40, false), ""},
		{many(40, true), "kxxx"},
		{`[1,2]`, ""},
		{`{"a":`, ""},
		{``, ""},
	}
	for _, c := range cases {
		err := CheckDuplicateKeys([]byte(c.body))
		switch {
		case c.key == "" && err != nil:
			t.Errorf("%s: %v; want accepted", c.body, err)
		case c.key != "" && (err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), `"`+c.key+`"`)):
			t.Errorf("%s: %v; want ErrMalformed naming %q", c.body, err, c.key)
		}
	}
}

// FuzzCheckDuplicateKeys holds the scanner to encoding/json's reading of
// valid documents: it reports a duplicate exactly when the root object's
// decoded member names repeat.
func FuzzCheckDuplicateKeys(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"a":1},"b":[1,"a"]}`, `{"\u0061":1,"a":2}`, `{}`, `{"a":"\\","b":"\""}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := CheckDuplicateKeys([]byte(s))
		if !json.Valid([]byte(s)) || !utf8.ValidString(s) {
			return // anything but a panic or a hang
		}
		dec := json.NewDecoder(strings.NewReader(s))
		tok, _ := dec.Token()
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			if err != nil {
				t.Fatalf("%q is not an object but gave %v", s, err)
			}
			return
		}
		seen := map[string]bool{}
		want := false
		for dec.More() {
			k, _ := dec.Token()
			key := k.(string)
			if seen[key] {
				want = true
			}
			seen[key] = true
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				t.Fatal("decode")
			}
		}
		if want != (err != nil) {
			t.Fatalf("%q: duplicate %v, scanner says %v", s, want, err)
		}
	})
}

// BenchmarkCheckDuplicateKeys measures the scan on a 30-turn agent request
// next to the validation every parsed request already pays.
func BenchmarkCheckDuplicateKeys(b *testing.B) {
	body := workload.AnthropicAgent(30, false)
	b.Run("dupkeys", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if err := CheckDuplicateKeys(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validJSON", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if !jsonkit.Valid(body) {
				b.Fatal("invalid")
			}
		}
	})
}
