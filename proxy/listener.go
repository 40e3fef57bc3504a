package proxy

import (
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// resilientListener keeps accepting through errors that pass: out of file
// descriptors (EMFILE, ENFILE) or memory for sockets, or a connection the
// peer aborted before it was accepted. fasthttp treats any accept error but a
// timeout as fatal and returns from Serve, which would take the whole proxy
// and every open stream down the moment the process hits its descriptor
// limit. Like net/http, it backs off (5 ms doubling to 1 s) and retries, and
// logs the condition once per streak.
type resilientListener struct {
	net.Listener
	log    *zap.Logger
	onFail func() // counts each failed accept (metrics)
	closed atomic.Bool
	sleep  func(time.Duration) // tests
}

func newResilientListener(ln net.Listener, log *zap.Logger, onFail func()) *resilientListener {
	return &resilientListener{Listener: ln, log: log, onFail: onFail, sleep: time.Sleep}
}

// Accept implements net.Listener.
func (l *resilientListener) Accept() (net.Conn, error) {
	delay := time.Duration(0)
	for {
		c, err := l.Listener.Accept()
		if err == nil || l.closed.Load() || !transientAcceptError(err) {
			if err == nil && delay > 0 {
				l.log.Warn("accepting connections again")
			}
			return c, err
		}
		if l.onFail != nil {
			l.onFail()
		}
		if delay == 0 {
			delay = 5 * time.Millisecond
			l.log.Error("cannot accept connections; retrying with backoff (raise the file descriptor limit: ulimit -n)", zap.Error(err))
		} else {
			delay = min(2*delay, time.Second)
		}
		l.sleep(delay)
	}
}

// Close implements net.Listener.
func (l *resilientListener) Close() error {
	l.closed.Store(true)
	return l.Listener.Close()
}

// transientAcceptError reports whether an accept error passes with time.
func transientAcceptError(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}
