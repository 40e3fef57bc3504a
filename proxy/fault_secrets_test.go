package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/logging"
	"github.com/shepherd-proxy/shepherd/state"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// Sentinel credentials: each is sent in one credential position and must
// appear nowhere shepherd writes (logs, /metrics, the sessions API, the
// store). They share the marker so one search finds any of them.
const (
	secretMarker    = "SENTINEL"
	secretAPIKey    = "SENTINELxapikey0001"
	secretBearer    = "SENTINELbearer0002"
	secretGoogKey   = "SENTINELgoogkey0003"
	secretQueryKey  = "SENTINELquerykey0004"
	secretRedisPass = "SENTINELredispass0005"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Sync() error { return nil }

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// debugLogger writes every level as JSON lines into buf.
func debugLogger(buf *syncBuffer) *zap.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zap.New(zapcore.NewCore(enc, buf, zapcore.DebugLevel))
}

// credentialHeaders carries every sentinel credential header.
func credentialHeaders(extra map[string]string) map[string]string {
	h := map[string]string{
		"X-Api-Key":      secretAPIKey,
		"Authorization":  "Bearer " + secretBearer,
		"X-Goog-Api-Key": secretGoogKey,
	}
	for k, v := range extra {
		h[k] = v
	}
	return h
}

// rawCredentialHeaders is the same set as raw header lines.
const rawCredentialHeaders = "X-Api-Key: " + secretAPIKey + "\r\n" +
	"Authorization: Bearer " + secretBearer + "\r\n" +
	"X-Goog-Api-Key: " + secretGoogKey + "\r\n"

// rawRoundTrip writes req on a fresh connection and returns what the server
// answers until it closes the connection (or 5 s pass).
func rawRoundTrip(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(c, req)
	var out bytes.Buffer
	_, _ = io.Copy(&out, c)
	return out.String()
}

// refusalRequests are raw requests fasthttp refuses before the handler
// runs, each on path (which carries ?key=) with every credential header.
func refusalRequests(path string, maxBody int) map[string]string {
	hdr := "Host: shepherd\r\nAnthropic-Version: 2023-06-01\r\n" + rawCredentialHeaders
	return map[string]string{
		"invalid_header_value": "POST " + path + " HTTP/1.1\r\n" + hdr + "X-Bad: a\x01" + secretAPIKey + "\r\nContent-Length: 2\r\n\r\n{}",
		"invalid_header_key":   "POST " + path + " HTTP/1.1\r\n" + hdr + "Bad\x01Key: v\r\nContent-Length: 2\r\n\r\n{}",
		"bad_version":          "POST " + path + " HTTP/7.3\r\n" + hdr + "Content-Length: 2\r\n\r\n{}",
		"bad_chunking":         "POST " + path + " HTTP/1.1\r\n" + hdr + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
		"oversize_length":      "POST " + path + " HTTP/1.1\r\n" + hdr + fmt.Sprintf("Content-Length: %d\r\n\r\n{}", maxBody+1),
		"oversize_chunked": "POST " + path + " HTTP/1.1\r\n" + hdr + "Transfer-Encoding: chunked\r\n\r\n" +
			fmt.Sprintf("%x\r\n%s\r\n", maxBody+10, strings.Repeat("a", maxBody+10)) + "0\r\n\r\n",
		"oversize_header": "POST " + path + " HTTP/1.1\r\n" + hdr + "X-Pad: " + strings.Repeat("p", 20<<10) + "\r\n\r\n",
	}
}

// faultUpstream is a TCP server playing a broken provider: "echo" answers
// with an invalid response that quotes the request bytes it received
// (credentials included), "hang" accepts and never answers.
func faultUpstream(t *testing.T, mode string) string {
	t.Helper()
	ln := kit.Listen(t)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(3 * time.Second))
				buf := make([]byte, 4096)
				n, _ := bufio.NewReader(c).Read(buf)
				if mode == "echo" {
					_, _ = fmt.Fprintf(c, "HTTP/1.1 2x0 %s\r\nX-Echo: %s\r\n\r\n", buf[:n], buf[:n])
					return
				}
				_, _ = io.Copy(io.Discard, c) // hang until the deadline
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// closedPort returns an address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	return "http://" + kit.FreeAddr(t)
}

// driveEveryPath sends, with every sentinel credential, a valid request per
// API and every refusal over raw TCP on each API's path.
func driveEveryPath(t *testing.T, h *harness, maxBody int) {
	t.Helper()
	for _, c := range modelCases() {
		sep := "?"
		if strings.Contains(c.path, "?") {
			sep = "&"
		}
		resp, _ := do(t, "POST", h.URL+c.path+sep+"key="+secretQueryKey, c.body,
			credentialHeaders(map[string]string{"Anthropic-Version": "2023-06-01"}))
		_ = resp
	}
	addr := strings.TrimPrefix(h.URL, "http://")
	for _, d := range kit.Drivers() {
		for _, req := range refusalRequests(d.Path("g", false)+"?key="+secretQueryKey, maxBody) {
			rawRoundTrip(t, addr, req)
		}
	}
}

// requireNoSecret fails when a sentinel appears in what.
func requireNoSecret(t *testing.T, where, what string) {
	t.Helper()
	if i := strings.Index(what, secretMarker); i >= 0 {
		lo, hi := max(0, i-300), min(len(what), i+100)
		t.Fatalf("a sentinel credential reached %s: …%s…", where, what[lo:hi])
	}
}

// requireNoSecretAnywhere checks the admin answers and the store.
func requireNoSecretAnywhere(t *testing.T, h *harness, logs *syncBuffer) {
	t.Helper()
	_, metrics := do(t, "GET", h.URL+"/metrics", "", nil)
	requireNoSecret(t, "/metrics", string(metrics))
	_, list := do(t, "GET", h.URL+"/shepherd/v1/sessions", "", nil)
	requireNoSecret(t, "the session list", string(list))
	var l struct {
		Sessions []struct {
			ID     string `json:"id"`
			Tenant string `json:"tenant"`
		} `json:"sessions"`
	}
	if json.Unmarshal(list, &l) == nil {
		for _, s := range l.Sessions {
			_, one := do(t, "GET", h.URL+"/shepherd/v1/sessions/"+s.ID+"?include=ledger&tenant="+s.Tenant, "", nil)
			requireNoSecret(t, "a session answer", string(one))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sums, err := h.store.List(ctx, "", 1000)
	if err == nil {
		for _, sum := range sums {
			sess, err := h.store.Get(ctx, state.Key{Tenant: sum.Tenant, Session: sum.ID})
			if err == nil {
				b, _ := json.Marshal(sess)
				requireNoSecret(t, "stored state", string(b))
			}
			b, _ := json.Marshal(sum)
			requireNoSecret(t, "stored state", string(b))
		}
	}
	requireNoSecret(t, "the log", logs.String())
}

// TestSecretsNeverLeak runs the real proxy with a debug-level logger into a
// buffer and drives every error path reachable from outside (malformed
// headers, bad chunking, over-limit bodies over raw TCP; an upstream that
// works, one that refuses connections, one that hangs past the timeout, one
// that answers garbage quoting the request; a Redis store that is down),
// always with sentinel credentials in x-api-key, Authorization,
// x-goog-api-key and ?key=. No sentinel may appear in a log line, /metrics,
// a sessions-API answer or the stored state.
func TestSecretsNeverLeak(t *testing.T) {
	const maxBody = 64 << 10
	upstreams := map[string]func(t *testing.T) string{
		"working":    func(*testing.T) string { return "" },
		"refused":    closedPort,
		"hanging":    func(t *testing.T) string { return faultUpstream(t, "hang") },
		"echoing":    func(t *testing.T) string { return faultUpstream(t, "echo") },
		"redis_down": func(*testing.T) string { return "" },
	}
	for name, upstream := range upstreams {
		t.Run(name, func(t *testing.T) {
			logs := &syncBuffer{}
			log := debugLogger(logs)
			logging.RouteLibraries(log)
			t.Cleanup(func() { logging.RouteLibraries(zap.NewNop()) })
			var store state.Store
			if name == "redis_down" {
				var err error
				store, err = state.NewRedis(state.RedisOptions{
					URL:     "redis://user:" + secretRedisPass + "@" + strings.TrimPrefix(closedPort(t), "http://") + "/0",
					Timeout: 200 * time.Millisecond, KeyPrefix: "shepherd-test-secrets", TTL: time.Hour,
				})
				require.NoError(t, err)
			}
			url := upstream(t)
			h := newHarness(t, harnessOptions{Logger: log, Store: store, Config: func(c *config.Config) {
				c.Limits.MaxBodyBytes = maxBody
				c.Limits.UpstreamTimeout = 500 * time.Millisecond
				c.Topics.Enabled = true // sessions are recorded
				c.Features.SideRequests = config.SideRequestsInject
				if url != "" {
					c.Upstreams.Anthropic, c.Upstreams.OpenAI, c.Upstreams.Gemini = url, url, url
				}
			}})
			driveEveryPath(t, h, maxBody)
			time.Sleep(300 * time.Millisecond) // let session writes land
			requireNoSecretAnywhere(t, h, logs)
			require.NotEmpty(t, logs.String(), "the paths driven write log lines")
		})
	}
}

// TestSecretsNeverReachRedis drives the same paths against a live Redis
// store and scans every key and value shepherd wrote.
func TestSecretsNeverReachRedis(t *testing.T) {
	url := kit.RedisURL(t)
	const maxBody = 64 << 10
	prefix := fmt.Sprintf("shepherd-secrets-%d", time.Now().UnixNano())
	store, err := state.NewRedis(state.RedisOptions{URL: url, Timeout: time.Second, KeyPrefix: prefix, TTL: time.Hour})
	require.NoError(t, err)
	logs := &syncBuffer{}
	h := newHarness(t, harnessOptions{Logger: debugLogger(logs), Store: store, Config: func(c *config.Config) {
		c.Limits.MaxBodyBytes = maxBody
		c.Topics.Enabled = true
		// The model cases declare no tools: treat them as turns so sessions
		// are stored and scanned.
		c.Features.SideRequests = config.SideRequestsInject
	}})
	driveEveryPath(t, h, maxBody)
	time.Sleep(300 * time.Millisecond)
	requireNoSecretAnywhere(t, h, logs)

	opt, err := redis.ParseURL(url)
	require.NoError(t, err)
	rc := redis.NewClient(opt)
	defer rc.Close()
	ctx := context.Background()
	keys, err := rc.Keys(ctx, prefix+"*").Result()
	require.NoError(t, err)
	require.NotEmpty(t, keys, "sessions were stored")
	for _, k := range keys {
		requireNoSecret(t, "a Redis key", k)
		requireNoSecret(t, "a Redis value", redisValue(t, rc, k))
	}
	t.Cleanup(func() { _ = rc.Del(context.Background(), keys...).Err() })
}

// redisValue renders any Redis value as text.
func redisValue(t *testing.T, rc *redis.Client, k string) string {
	t.Helper()
	ctx := context.Background()
	typ, err := rc.Type(ctx, k).Result()
	require.NoError(t, err)
	var v any
	switch typ {
	case "string":
		v, err = rc.Get(ctx, k).Result()
	case "hash":
		v, err = rc.HGetAll(ctx, k).Result()
	case "list":
		v, err = rc.LRange(ctx, k, 0, -1).Result()
	case "set":
		v, err = rc.SMembers(ctx, k).Result()
	case "zset":
		v, err = rc.ZRangeWithScores(ctx, k, 0, -1).Result()
	default:
		t.Fatalf("key %s has unexpected type %s", k, typ)
	}
	require.NoError(t, err)
	return fmt.Sprint(v)
}
