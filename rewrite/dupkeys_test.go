package rewrite

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// dupKeyErr is ParseIndexed's verdict on body's keys: its error when that
// names a duplicate key, else nil (other malformations are not the subject).
func dupKeyErr(body []byte) error {
	_, _, err := ParseIndexed(body)
	if err != nil && strings.Contains(err.Error(), "duplicate top-level key") {
		return err
	}
	return nil
}

// TestDuplicateKeys: ParseIndexed refuses a body whose root object repeats
// a member name, after unescaping, and accepts repeats below the root.
func TestDuplicateKeys(t *testing.T) {
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
		err := dupKeyErr([]byte(c.body))
		switch {
		case c.key == "" && err != nil:
			t.Errorf("%s: %v; want accepted", c.body, err)
		case c.key != "" && (err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), `"`+c.key+`"`)):
			t.Errorf("%s: %v; want ErrMalformed naming %q", c.body, err, c.key)
		}
	}
}

// FuzzDuplicateKeys holds the index's check to encoding/json's reading of
// valid documents: it reports a duplicate exactly when the root object's
// decoded member names repeat.
func FuzzDuplicateKeys(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"a":1},"b":[1,"a"]}`, `{"\u0061":1,"a":2}`, `{}`, `{"a":"\\","b":"\""}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := dupKeyErr([]byte(s))
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

// TestDuplicateKeysThroughMemo: a repeated key added after the conversation
// of a body the index memo resumes from is still refused, and the body
// before it still accepted.
func TestDuplicateKeysThroughMemo(t *testing.T) {
	views := NewViewCache(64 << 20)
	base := memoConversation(12, "")
	if _, err := parseMemo(views, base); err != nil {
		t.Fatal(err)
	}
	dup := append(base[:len(base)-1:len(base)-1], `,"model":"other"}`...)
	_, err := parseMemo(views, dup)
	if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), `"model"`) {
		t.Fatalf("duplicate after a resumed conversation: %v; want ErrMalformed naming model", err)
	}
	if _, err := parseMemo(views, memoConversation(13, "")); err != nil {
		t.Fatalf("the grown body without a duplicate: %v", err)
	}
}
