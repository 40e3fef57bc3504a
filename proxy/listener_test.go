package proxy

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
)

// stubListener returns the queued errors, then a connection.
type stubListener struct {
	errs []error
	conn net.Conn
}

func (s *stubListener) Accept() (net.Conn, error) {
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		return nil, err
	}
	return s.conn, nil
}
func (s *stubListener) Close() error   { return nil }
func (s *stubListener) Addr() net.Addr { return &net.TCPAddr{} }

func TestResilientListenerRetriesTransientErrors(t *testing.T) {
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	stub := &stubListener{errs: []error{emfile, emfile, emfile}, conn: c1}
	fails := 0
	var slept []time.Duration
	l := newResilientListener(stub, zap.NewNop(), func() { fails++ })
	l.sleep = func(d time.Duration) { slept = append(slept, d) }
	c, err := l.Accept()
	if err != nil || c != c1 {
		t.Fatalf("Accept = %v, %v; want the connection after the EMFILE errors", c, err)
	}
	if fails != 3 || len(slept) != 3 || slept[0] != 5*time.Millisecond || slept[2] != 20*time.Millisecond {
		t.Fatalf("fails %d, backoff %v; want 3 failures with 5ms, 10ms, 20ms", fails, slept)
	}

	// Other errors end Serve as before.
	boom := errors.New("boom")
	l = newResilientListener(&stubListener{errs: []error{boom}}, zap.NewNop(), nil)
	if _, err := l.Accept(); !errors.Is(err, boom) {
		t.Fatalf("Accept = %v; want boom passed through", err)
	}
	// After Close, nothing is retried.
	l = newResilientListener(&stubListener{errs: []error{emfile}}, zap.NewNop(), nil)
	_ = l.Close()
	if _, err := l.Accept(); err == nil {
		t.Fatal("Accept after Close succeeded")
	}
}
