package rewrite

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

var rawViews = NewViewParser("raw")

// rawMessage views any element as one text block holding its raw JSON: it
// accepts numbers, which no API's parser does, to test where reuse stops.
func rawMessage(el gjson.Result, _ *ToolNames) (conv.Message, error) {
	return conv.Message{Role: conv.RoleUser, Blocks: []conv.Block{{Kind: conv.BlockText, Text: strings.Clone(el.Raw)}}}, nil
}

func rawBody(elems ...string) []byte {
	sys, _ := json.Marshal(strings.Repeat("rules. ", indexMemoMinBytes/7))
	return []byte(`{"system":` + string(sys) + `,"messages":[` + strings.Join(elems, ",") + `]}`)
}

// parseRaw parses body's messages through views as a codec does, and
// reports how many elements were looked up in the view cache (not reused).
func parseRaw(t *testing.T, views *ViewCache, body []byte) ([]conv.Message, []string, uint64) {
	t.Helper()
	h0, m0 := views.Stats()
	b, err := ParseBody(views, body, "messages")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	var m [1]gjson.Result
	b.Idx.Lookup([]string{"messages"}, m[:])
	msgs, anchors, err := ParseMessages(b, m[0], "messages", rawViews, rawMessage)
	if err != nil {
		t.Fatal(err)
	}
	h1, m1 := views.Stats()
	return msgs, anchors, h1 + m1 - h0 - m0
}

// TestParseMessagesReuseBoundary: an element that ends where the shared
// bytes end is reused when it is an object, not when it is a number (a
// digit may follow); only the others are looked up; the views and
// anchors are those of a parse from scratch.
func TestParseMessagesReuseBoundary(t *testing.T) {
	views := NewViewCache(64 << 20)
	steps := []struct {
		elems  []string
		lookup uint64 // elements not reused
	}{
		{[]string{`{"a":1}`, `{"b":2}`, `12`}, 3},
		{[]string{`{"a":1}`, `{"b":2}`, `123`}, 1},                         // 12 was followed by ']'
		{[]string{`{"a":1}`, `{"b":2}`, `123`, `{"c":"d"}`}, 2},            // 123 again: then followed by ']'
		{[]string{`{"a":1}`, `{"b":2}`, `123`, `{"c":"d"}`, `{"e":5}`}, 1}, // {"c":"d"} ends where they differ
		{[]string{`{"a":1}`, `{"b":2}`, `123`, `{"c":"x"}`, `{"e":5}`}, 2}, // edited inside
		{[]string{`{"a":1}`, `{"b":3}`, `123`, `{"c":"x"}`, `{"e":5}`}, 5}, // the first reply edited: another conversation (memoKey)
		{[]string{`{"a":1}`}, 1},                                           // one element: keyed by it alone, another key
	}
	var reused uint64
	for i, s := range steps {
		body := rawBody(s.elems...)
		got, anchors, lookups := parseRaw(t, views, body)
		want, _, _ := parseRaw(t, nil, body)
		if len(got) != len(want) {
			t.Fatalf("step %d: %d messages, want %d", i, len(got), len(want))
		}
		for j := range want {
			if g, w := got[j].Blocks[0].Text, want[j].Blocks[0].Text; g != w {
				t.Fatalf("step %d: message %d is %s, want %s", i, j, g, w)
			}
		}
		if w := conv.Anchors(want); strings.Join(anchors, ",") != strings.Join(w, ",") {
			t.Fatalf("step %d: anchors %v, want %v", i, anchors, w)
		}
		if lookups != s.lookup {
			t.Fatalf("step %d: %d elements looked up, want %d", i, lookups, s.lookup)
		}
		reusedBefore := reused
		if reused = views.Reused(); reused-reusedBefore != uint64(len(s.elems))-s.lookup {
			t.Fatalf("step %d: %d elements reused, want %d", i, reused-reusedBefore, uint64(len(s.elems))-s.lookup)
		}
	}
}

// TestParseMessagesReuseHandsOutStableViews: the views and anchors a parse
// returned stay as they were while later bodies of the conversation are
// parsed, growing it and editing its last elements (run with -race: the
// memo appends after what it handed out, and copies what a body shares
// only in part).
func TestParseMessagesReuseHandsOutStableViews(t *testing.T) {
	views := NewViewCache(64 << 20)
	var elems []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 60 {
		if i%3 == 0 && len(elems) > 0 {
			elems[len(elems)-1] = `{"edited":` + strings.Repeat("1", i%7+1) + `}`
		}
		elems = append(elems, `{"n":`+strings.Repeat("2", i%5+1)+`}`)
		msgs, anchors, _ := parseRaw(t, views, rawBody(elems...))
		texts, joined := rawTexts(msgs), strings.Join(anchors, ",")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if rawTexts(msgs) != texts || strings.Join(anchors, ",") != joined {
					t.Error("a returned view changed")
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	close(stop)
	wg.Wait()
}

func rawTexts(msgs []conv.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Blocks[0].Text)
	}
	return b.String()
}
