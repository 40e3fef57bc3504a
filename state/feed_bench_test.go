package state

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// benchFeed runs the feed's hot operations against st: an append of one
// ~400-byte record (what a request emits several times), a read of 100
// records after a cursor (an SSE catch-up) and a hold + decide.
func benchFeed(b *testing.B, st feedStore) {
	ctx := context.Background()
	key := Key{Tenant: "bench", Session: "s"}
	rec := [][]byte{bytes.Repeat([]byte("x"), 400)}
	b.Run("AppendEvents", func(b *testing.B) {
		for b.Loop() {
			if err := st.AppendEvents(ctx, key, rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SessionEvents100", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.SessionEvents(ctx, key, "0-1", 100); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("HoldDecide", func(b *testing.B) {
		i := 0
		for b.Loop() {
			id := fmt.Sprint("c", i)
			i++
			if err := st.HoldApproval(ctx, key, testApproval(id, time.Now(), time.Minute)); err != nil {
				b.Fatal(err)
			}
			if _, err := st.DecideApproval(ctx, key, id, ApprovalApproved, "api", ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkMemoryFeed(b *testing.B) {
	m := NewMemory(MemoryOptions{})
	defer m.Close()
	benchFeed(b, m)
}

func BenchmarkRedisFeed(b *testing.B) {
	url := os.Getenv("REDIS_URL")
	if url == "" {
		b.Skip("REDIS_URL not set")
	}
	r, err := NewRedis(RedisOptions{URL: url, KeyPrefix: fmt.Sprint("shepherd-bench-", time.Now().UnixNano()), TTL: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	benchFeed(b, r)
	ctx := context.Background()
	_ = r.client.Del(ctx, r.eventsKey(Key{Tenant: "bench", Session: "s"}), r.approvalsKey(Key{Tenant: "bench", Session: "s"}), r.globalEventsKey(), r.approvalIndex()).Err()
}
