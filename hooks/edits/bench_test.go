package edits

import (
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// BenchmarkObserveWrite: the watcher's cost for a 64 KiB Write streamed in
// 16-byte fragments (the reply goroutine's share), per call.
func BenchmarkObserveWrite(b *testing.B) {
	h := New(Options{})
	defer h.Close()
	a := string(args("file_path", "/w/big.go", "content", strings.Repeat("0123456789abcdef", 4096)))
	call := callOn(session("", ""), user("go"))
	b.SetBytes(int64(len(a)))
	b.ReportAllocs()
	for b.Loop() {
		obs := h.WatchCalls(call)
		obs(conv.ToolCallDelta{ID: "w1", Name: "Write"})
		for i := 0; i < len(a); i += 16 {
			obs(conv.ToolCallDelta{Fragment: a[i:min(i+16, len(a))]})
		}
		obs(conv.ToolCallDelta{Done: true})
	}
}
