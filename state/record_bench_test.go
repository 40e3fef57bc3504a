package state

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchSession is a session shaped like a working agent's: 60 ledger
// entries and a few hook slots.
func benchSession() *Session {
	s := &Session{ID: "s", Tenant: "t", CreatedAt: time.Now(), UpdatedAt: time.Now(), Requests: 60, Agent: "claude-code", Model: "m"}
	for i := range 60 {
		s.Ledger = append(s.Ledger, LedgerEntry{Kind: "user_text", Anchor: fmt.Sprintf("%040x", i), Data: []byte(`{"v":1,"texts":["` + strings.Repeat("reminder ", 20) + `"]}`)})
	}
	s.Slots = Slots{}
	for _, name := range []string{"topics", "intents", "recovery", "prefix"} {
		data, _ := json.Marshal(map[string]any{"items": strings.Split(strings.Repeat("chapter,", 40), ","), "n": 3})
		s.Slots[name] = &RawSlot{V: 1, Data: data}
	}
	return s
}

func BenchmarkRecord(b *testing.B) {
	s := benchSession()
	raw, err := encodeRecord(s)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := encodeRecord(s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var d Session
			if err := decodeRecord(raw, &d); err != nil {
				b.Fatal(err)
			}
		}
	})
}
