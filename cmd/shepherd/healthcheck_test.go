package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// adminStub answers /healthz 200 and /readyz with ready's status.
func adminStub(t *testing.T, ready int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			w.WriteHeader(http.StatusOK)
		case "/readyz":
			w.WriteHeader(ready)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHealthcheck(t *testing.T) {
	up := adminStub(t, http.StatusServiceUnavailable)
	_, port, err := net.SplitHostPort(up.Listener.Addr().String())
	require.NoError(t, err)
	closed := freeAddr(t) // nothing listens there
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		ok   bool
	}{
		{name: "healthz 200", args: []string{"-url", up.URL}, ok: true},
		{name: "bare host:port", args: []string{"-url", up.Listener.Addr().String()}, ok: true},
		{name: "readyz 503", args: []string{"-url", up.URL, "-ready"}, ok: false},
		{name: "nothing listens", args: []string{"-url", "http://" + closed, "-timeout", "500ms"}, ok: false},
		{name: "from admin.listen, unspecified host dialled on loopback", env: map[string]string{"SHEPHERD_ADMIN_LISTEN": "0.0.0.0:" + port, "SHEPHERD_ADMIN_TOKEN": "t0ken"}, ok: true},
		{name: "from listen when admin shares it", env: map[string]string{"SHEPHERD_ADMIN_LISTEN": "", "SHEPHERD_LISTEN": "127.0.0.1:" + port}, ok: true},
		{name: "from the default admin address, nothing there", env: map[string]string{"SHEPHERD_ADMIN_LISTEN": closed}, ok: false},
		{name: "stray argument", args: []string{"-url", up.URL, "extra"}, ok: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			err := runHealthcheck(context.Background(), tc.args, io.Discard)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

// TestHealthcheckExitStatus: the binary's `healthcheck` exits 0 for a
// healthy server and 1 otherwise (what Docker's HEALTHCHECK reads).
func TestHealthcheckExitStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	up := adminStub(t, http.StatusServiceUnavailable)
	run := func(args ...string) int {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := exec.CommandContext(ctx, bin, append([]string{"healthcheck"}, args...)...).Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		require.NoError(t, err)
		return 0
	}
	require.Equal(t, 0, run("-url", up.URL))
	require.Equal(t, 1, run("-url", up.URL, "-ready"))
	require.Equal(t, 1, run("-url", "http://"+freeAddr(t), "-timeout", "500ms"))
}

// TestHealthcheckOfRunningBinary runs the binary as the image does (the
// example config, the address from the environment) and checks it with
// the image's HEALTHCHECK command: healthy, and ready on the memory store;
// once the server stopped, unhealthy.
func TestHealthcheckOfRunningBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	env := append(os.Environ(), "SHEPHERD_LISTEN="+freeAddr(t), "SHEPHERD_ADMIN_LISTEN="+freeAddr(t))
	srv := exec.Command(bin, "-config", "../../config.example.yaml")
	srv.Env = env
	require.NoError(t, srv.Start())
	defer func() { _ = srv.Process.Kill() }()

	check := func(extra ...string) int {
		cmd := exec.Command(bin, append([]string{"healthcheck", "-config", "../../config.example.yaml"}, extra...)...)
		cmd.Env = env
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		require.NoError(t, err)
		return 0
	}
	require.Eventually(t, func() bool { return check() == 0 }, 10*time.Second, 100*time.Millisecond)
	require.Equal(t, 0, check("-ready"))

	require.NoError(t, srv.Process.Signal(syscall.SIGTERM))
	_ = srv.Wait()
	require.Equal(t, 1, check())
}
