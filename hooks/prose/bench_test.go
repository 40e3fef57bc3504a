package prose

import (
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// BenchmarkJudge: judging a 2 KB tool-loop reply (the per-reply cost).
func BenchmarkJudge(b *testing.B) {
	reply := &conv.Reply{Text: strings.Repeat("The fixture is stale so the test fails here. ", 45)}
	b.ReportAllocs()
	b.SetBytes(int64(len(reply.Text)))
	for b.Loop() {
		if _, ok := Judge(reply, 25); !ok {
			b.Fatal("not detected")
		}
	}
}
