package kit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// NginxBinary is the path of nginx, or skips the test with the reason when
// it is not installed (make test installs Debian's nginx-light when it can).
func NginxBinary(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"nginx", "/usr/sbin/nginx"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Skip("nginx not installed (Debian package nginx-light; make test installs it when it can)")
	return ""
}

// StartBalancer starts nginx on a free loopback port as a round-robin load
// balancer in front of the base URLs (http://host:port) and returns its
// base URL. Every request goes to the next upstream in turn (no
// stickiness, no retry on another upstream: a failure reaches the client).
// Streams pass through unbuffered. nginx stops when the test ends.
func StartBalancer(t testing.TB, upstreams ...string) string {
	t.Helper()
	bin := NginxBinary(t)
	dir := t.TempDir()
	var servers strings.Builder
	for _, u := range upstreams {
		fmt.Fprintf(&servers, "    server %s max_fails=0;\n", strings.TrimPrefix(u, "http://"))
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		addr := FreeAddr(t)
		conf := fmt.Sprintf(`daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  client_max_body_size 64m;
  upstream shepherd {
%[2]s    keepalive 16;
  }
  server {
    listen %[3]s;
    location / {
      proxy_pass http://shepherd;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_next_upstream off;
      proxy_read_timeout 60s;
    }
  }
}
`, dir, servers.String(), addr)
		path := filepath.Join(dir, "nginx.conf")
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			t.Fatalf("kit: %v", err)
		}
		cmd := exec.Command(bin, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", path)
		dieWithTest(cmd)
		if err := cmd.Start(); err != nil {
			t.Fatalf("kit: start nginx: %v", err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		stop := func() { _ = cmd.Process.Signal(syscall.SIGTERM); <-done }
		up := make(chan error, 1)
		go func() {
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				select {
				case <-done:
					up <- fmt.Errorf("nginx exited")
					return
				default:
				}
				if c, err := dialQuick(addr); err == nil {
					_ = c.Close()
					up <- nil
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
			up <- fmt.Errorf("nginx did not listen on %s", addr)
		}()
		if lastErr = <-up; lastErr == nil {
			t.Cleanup(stop)
			return "http://" + addr
		}
		stop()
		log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		lastErr = fmt.Errorf("%w: %s", lastErr, log)
	}
	t.Fatalf("kit: nginx did not start: %v", lastErr)
	return ""
}
