package state

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// listSlot is a slot that grows with its session, as topics' chapters and
// intents' audit do: CloneSlot copies its list.
type listSlot struct{ Items []string }

func (*listSlot) SlotVersion() int  { return 1 }
func (s *listSlot) CloneSlot() Slot { return &listSlot{Items: slices.Clone(s.Items)} }

// BenchmarkMemoryTurn is one turn's store work on the memory store (a Get,
// then an Update whose effect changes one of the session's slots) for a
// session whose other slots hold items entries: what a long session's
// turn pays for the slots it does not change.
func BenchmarkMemoryTurn(b *testing.B) {
	for _, items := range []int{10, 1000} {
		b.Run(fmt.Sprint("items=", items), func(b *testing.B) {
			m := NewMemory(MemoryOptions{})
			defer m.Close()
			ctx := context.Background()
			key := Key{Tenant: "t", Session: "s"}
			big := make([]string, items)
			for i := range big {
				big[i] = fmt.Sprint("call-", i)
			}
			_, err := m.Update(ctx, key, func(s *Session) error {
				s.SetSlot("topics", &listSlot{Items: big})
				s.SetSlot("intents", &listSlot{Items: slices.Clone(big)})
				s.SetSlot("recovery", &listSlot{})
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Get(ctx, key); err != nil {
					b.Fatal(err)
				}
				_, err := m.Update(ctx, key, func(s *Session) error {
					s.Requests++
					sl := s.Slots["recovery"].(*listSlot).CloneSlot().(*listSlot)
					sl.Items = append(sl.Items[:0], "x")
					s.SetSlot("recovery", sl)
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
