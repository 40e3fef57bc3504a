package kit

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// Listen opens a TCP listener on a free loopback port; it closes when the
// test ends (closing it earlier is fine).
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("kit: listen on loopback: %v", err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// ServeConns opens a listener as Listen does and hands every connection it
// accepts to handle, each on a goroutine of its own, until the listener
// closes (at the end of the test at the latest).
func ServeConns(t testing.TB, handle func(net.Conn)) net.Listener {
	t.Helper()
	ln := Listen(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return ln
}

// FreeAddr is a loopback address (host:port) that was free a moment ago:
// for a process the test starts that must be told its port.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("kit: listen on loopback: %v", err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// WaitPort waits until addr accepts TCP connections, failing the test
// after within.
func WaitPort(t testing.TB, addr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kit: %s did not accept connections within %s: %v", addr, within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// RedisURL is REDIS_URL, or skips the test when it is not set.
func RedisURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("REDIS_URL")
	if u == "" {
		t.Skip("REDIS_URL not set; make test provides a private redis-server")
	}
	return u
}

// StartMock starts the scripted mock provider (all four APIs); it stops
// when the test ends.
func StartMock(t testing.TB, o mock.Options) *mock.Server {
	t.Helper()
	m := mock.New(o)
	if err := m.Start(); err != nil {
		t.Fatalf("kit: start the mock provider: %v", err)
	}
	t.Cleanup(m.Close)
	return m
}

// dialQuick opens a TCP connection to addr, giving up after 200 ms.
func dialQuick(addr string) (net.Conn, error) {
	return net.DialTimeout("tcp", addr, 200*time.Millisecond)
}
