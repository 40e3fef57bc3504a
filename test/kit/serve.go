package kit

import (
	"context"
	"net"
	"testing"
	"time"
)

// Server is what Serve runs: the proxy's server (proxy.Server) or any
// server with the same two methods.
type Server interface {
	Serve(ln net.Listener) error
	Shutdown(ctx context.Context) error
}

// Serve runs srv on a fresh loopback listener and returns its base URL
// (http://host:port). When the test ends it shuts srv down (waiting up to
// five seconds for open requests), waits until Serve returned, then calls
// closers in order: what the server used and must outlive it (the
// features, the live feed, the store).
func Serve(t testing.TB, srv Server, closers ...func()) string {
	t.Helper()
	ln := Listen(t)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
		for _, c := range closers {
			c()
		}
	})
	return "http://" + ln.Addr().String()
}
