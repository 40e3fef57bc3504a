package proxy_test

import (
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/config"
)

// trickle writes s one byte per gap until the server closes the connection
// or s is sent, and returns how long the server kept it open.
func trickle(t *testing.T, c net.Conn, s string, gap time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(io.Discard, c) // returns when the server closes
	}()
	for i := 0; i < len(s); i++ {
		select {
		case <-done:
			return time.Since(start)
		case <-time.After(gap):
		}
		if _, err := c.Write([]byte{s[i]}); err != nil {
			break
		}
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("server never closed the slow connection")
	}
	return time.Since(start)
}

// TestSlowHeadersCut: a client sending its headers one byte at a time (it
// is never silent long enough for an idle timeout) is cut when
// limits.header_timeout expires; one trickling its body is cut at
// limits.body_timeout.
func TestSlowHeadersCut(t *testing.T) {
	up := newRecordingUpstream(t)
	addr := startTrustProxy(t, up, func(c *config.Config) {
		c.Limits.HeaderTimeout = time.Second
		c.Limits.BodyTimeout = 1500 * time.Millisecond
	})
	head := "POST /v1/messages HTTP/1.1\r\nHost: shepherd\r\nAnthropic-Version: 2023-06-01\r\nX-Padding: " + strings.Repeat("a", 200) + "\r\n"

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	held := trickle(t, c, head, 100*time.Millisecond)
	require.Less(t, held, 3*time.Second, "slow headers held for %v", held)

	body := `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"` + strings.Repeat("a", 200) + `"}]}`
	c2, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c2.Close()
	_, err = io.WriteString(c2, head+"Content-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n")
	require.NoError(t, err)
	held = trickle(t, c2, body, 100*time.Millisecond)
	require.Less(t, held, 4*time.Second, "slow body held for %v", held)
	require.Greater(t, held, time.Second, "body cut before limits.body_timeout")
	require.Empty(t, up.requests())
}

// TestConnsPerIPCapped: with limits.max_conns_per_ip at 3, three open
// connections from 127.0.0.1 are served and the fourth is refused (429,
// closed); once one closes, a new one is served again.
func TestConnsPerIPCapped(t *testing.T) {
	up := newRecordingUpstream(t)
	addr := startTrustProxy(t, up, func(c *config.Config) { c.Limits.MaxConnsPerIP = 3 })
	api := trustAPIs()[0]
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		open = append(open, c)
	}
	// Each of the three is served (and stays open: keep-alive).
	for _, c := range open {
		_, err := io.WriteString(c, rawPost(api.path, api.headers, api.body))
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		buf := make([]byte, 64)
		n, err := c.Read(buf)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200 "), string(buf[:n]))
	}
	out, closed := rawExchange(t, addr, rawPost(api.path, api.headers, api.body), 10*time.Second)
	require.True(t, strings.HasPrefix(out, "HTTP/1.1 429 "), "fourth connection: %q", out)
	require.True(t, closed)
	require.Len(t, up.requests(), 3)

	open[0].Close()
	open = open[1:]
	require.Eventually(t, func() bool {
		out, _ := rawExchange(t, addr, rawPost(api.path, api.headers+"Connection: close\r\n", api.body), 10*time.Second)
		return strings.HasPrefix(out, "HTTP/1.1 200 ")
	}, 5*time.Second, 50*time.Millisecond)
}
