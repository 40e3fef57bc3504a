package kit

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLoopbackHelpers(t *testing.T) {
	ln := Listen(t)
	WaitPort(t, ln.Addr().String(), time.Second)
	addr := FreeAddr(t)
	_, err := net.DialTimeout("tcp", addr, time.Second)
	require.Error(t, err, "nothing listens on a free address")
	late, err := net.Listen("tcp", addr)
	require.NoError(t, err, "the free address can be listened on")
	defer late.Close()
	WaitPort(t, addr, time.Second)
}
