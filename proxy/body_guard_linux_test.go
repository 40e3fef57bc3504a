package proxy

import (
	"os"
	"syscall"
	"testing"
)

// guardedBodies hands out request body buffers mapped on pages of their own
// and unmaps them on release: a read of a released body faults (the test
// binary dies with the reader's stack), where a pooled buffer would
// quietly hold another request's bytes.
type guardedBodies struct{}

func (guardedBodies) acquire(n int) *pooledBody {
	size := (max(n, 1) + os.Getpagesize() - 1) &^ (os.Getpagesize() - 1)
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(err)
	}
	return &pooledBody{b: mem[:0], mem: mem}
}

func (guardedBodies) release(p *pooledBody) {
	if p.mem == nil {
		panic("proxy: a request body released twice")
	}
	if err := syscall.Munmap(p.mem); err != nil {
		panic(err)
	}
	p.mem, p.b = nil, nil
}

func TestMain(m *testing.M) {
	bodyBuffers = guardedBodies{}
	os.Exit(m.Run())
}
