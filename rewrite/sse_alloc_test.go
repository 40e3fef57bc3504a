//go:build !race

package rewrite

import (
	"io"
	"testing"
)

// repeatReader yields the same bytes forever, in fixed-size reads.
type repeatReader struct {
	data []byte
	off  int
	n    int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && n < r.n {
		c := copy(p[n:min(len(p), r.n)], r.data[r.off:])
		n += c
		r.off = (r.off + c) % len(r.data)
	}
	return n, nil
}

func TestReaderAllocs(t *testing.T) {
	stream := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0}\n\n" +
		": ping\n\n" + "data: line one\ndata: line two\n\n" + "id: 9\r\ndata: x\r\n\r\n"
	for _, chunk := range []int{1, 7, 4096} {
		rd := NewReader(&repeatReader{data: []byte(stream), n: chunk})
		// Warm up so buffers reach their steady-state size.
		for range 100 {
			if _, err := rd.Next(); err != nil {
				t.Fatal(err)
			}
		}
		allocs := testing.AllocsPerRun(1000, func() {
			if _, err := rd.Next(); err != nil && err != io.EOF {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("chunk %d: %v allocations per event, want 0", chunk, allocs)
		}
	}
}
