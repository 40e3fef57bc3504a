package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// buildBinary compiles the real shepherd binary once per test run.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "shepherd")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Run())
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// TestBinaryServesAndShutsDown runs the real binary with the example config
// plus env overrides, proxies a request to the mock, checks the admin
// listener, and stops it with SIGTERM.
func TestBinaryServesAndShutsDown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	m := mock.New(mock.Options{})
	require.NoError(t, m.Start())
	defer m.Close()
	m.Script(mock.Reply{Text: "hello from the mock"})

	listen, admin := freeAddr(t), freeAddr(t)
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "-config", "../../config.example.yaml", "-listen", listen)
	cmd.Env = append(os.Environ(),
		"SHEPHERD_UPSTREAMS_ANTHROPIC="+m.URL(),
		"SHEPHERD_ADMIN_LISTEN="+admin,
		"SHEPHERD_LOG_LEVEL=info",
	)
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill() }()

	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + admin + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}, 10*time.Second, 50*time.Millisecond, "binary did not come up: %s", &stderr)

	req, _ := http.NewRequest("POST", "http://"+listen+"/v1/messages",
		strings.NewReader(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("x-api-key", "sk-ant-never-logged")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Contains(t, string(body), "hello from the mock")

	resp, err = http.Get("http://" + admin + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case err := <-exited:
		require.NoError(t, err, "exit status; stderr: %s", &stderr)
	case <-ctx.Done():
		t.Fatal("binary did not stop on SIGTERM")
	}
	require.NotContains(t, stderr.String(), "sk-ant-never-logged", "credentials are never logged")
	require.Contains(t, stderr.String(), "shepherd starting")
}

// TestBinaryRejectsBadConfig: every configuration problem is reported at
// start-up with its key, and the process exits non-zero.
func TestBinaryRejectsBadConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"SHEPHERD_STATE_BACKEND=carrier-pigeon",
		"SHEPHERD_UPSTREAMS_OPENAI=ftp://example",
	)
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "state.backend")
	require.Contains(t, string(out), "upstreams.openai")
}
