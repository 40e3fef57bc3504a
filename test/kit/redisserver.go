package kit

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServerBinary is the path of redis-server, or skips the test with the
// reason when it is not installed (make test installs Debian's redis-server
// package, which brings redis-cli, when it can).
func RedisServerBinary(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (Debian package redis-server; make test installs it when it can): " + err.Error())
	}
	return p
}

// RedisCLIBinary is the path of redis-cli, or skips the test like
// RedisServerBinary.
func RedisCLIBinary(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed (Debian package redis-tools, a dependency of redis-server): " + err.Error())
	}
	return p
}

// RedisProc is one redis-server process the kit started on loopback. The
// test's cleanup kills it.
type RedisProc struct {
	Addr string // 127.0.0.1:port
	Dir  string // its working directory (config, logs)

	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	dead bool
}

// startRedisProc starts redis-server with args (after the port, bind and
// persistence options the kit sets) in a directory under dir, on a free
// loopback port, retrying on another port when it loses a race for one.
// extra, when set, is called with the chosen port and returns more
// arguments (for ports the server must be told, like the cluster bus).
// conf, when not empty, is written to redis.conf in the server's directory
// and given first (a sentinel needs a config file it can rewrite).
func startRedisProc(t testing.TB, dir, name string, extra func(port int) []string, conf string, args ...string) *RedisProc {
	t.Helper()
	bin := RedisServerBinary(t)
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		addr := FreeAddr(t)
		_, portText, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(portText)
		pdir := filepath.Join(dir, fmt.Sprintf("%s-%d", name, port))
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			t.Fatalf("kit: %v", err)
		}
		var all []string
		if conf != "" {
			path := filepath.Join(pdir, "redis.conf")
			if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
				t.Fatalf("kit: %v", err)
			}
			all = append(all, path)
		}
		all = append(all, "--port", portText, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--daemonize", "no", "--dir", pdir, "--logfile", filepath.Join(pdir, "redis.log"),
			"--repl-diskless-sync-delay", "0") // a replica syncs at once (default: after 5 s)
		if extra != nil {
			all = append(all, extra(port)...)
		}
		all = append(all, args...)
		cmd := exec.Command(bin, all...)
		cmd.Dir = pdir
		dieWithTest(cmd)
		if err := cmd.Start(); err != nil {
			t.Fatalf("kit: start redis-server: %v", err)
		}
		p := &RedisProc{Addr: addr, Dir: pdir, cmd: cmd, done: make(chan struct{})}
		go func() { _ = cmd.Wait(); close(p.done) }()
		t.Cleanup(p.Kill)
		if lastErr = p.waitPing(10 * time.Second); lastErr == nil {
			return p
		}
		p.Kill()
		lastErr = fmt.Errorf("%w; log: %s", lastErr, p.LogTail(10))
	}
	t.Fatalf("kit: redis-server did not start: %v", lastErr)
	return nil
}

// waitPing waits until the server answers PING, or it exits.
func (p *RedisProc) waitPing(within time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(within)
	for {
		select {
		case <-p.done:
			return fmt.Errorf("redis-server on %s exited", p.Addr)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s did not answer within %s: %w", p.Addr, within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill sends SIGKILL (as a crash would) and waits for the process to exit.
// Killing a dead server is a no-op.
func (p *RedisProc) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return
	}
	p.dead = true
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Dead reports whether Kill was called.
func (p *RedisProc) Dead() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dead
}

// LogTail returns the last n lines of the server's log, for failure
// messages.
func (p *RedisProc) LogTail(n int) string {
	b, err := os.ReadFile(filepath.Join(p.Dir, "redis.log"))
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// infoField returns field of INFO section (e.g. "cluster_state" of
// CLUSTER INFO text) from an INFO-style "k:v" text.
func infoField(text, field string) string {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// waitFor polls cond every 20 ms until it returns "" (done), failing the
// test with cond's last answer after within.
func waitFor(t testing.TB, within time.Duration, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		why := cond()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kit: %s: not within %s: %s", what, within, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
