package proxy_test

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	brotli "github.com/molecule-man/go-brrr"
	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/config"
)

func encode(t *testing.T, coding string, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	switch coding {
	case "gzip":
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(b)
		require.NoError(t, w.Close())
	case "deflate":
		w := zlib.NewWriter(&buf)
		_, _ = w.Write(b)
		require.NoError(t, w.Close())
	case "br":
		w, err := brotli.NewWriter(&buf, 5)
		require.NoError(t, err)
		_, _ = w.Write(b)
		require.NoError(t, w.Close())
	case "zstd":
		w, err := zstd.NewWriter(&buf)
		require.NoError(t, err)
		_, _ = w.Write(b)
		require.NoError(t, w.Close())
	default:
		t.Fatalf("no encoder for %s", coding)
	}
	return buf.Bytes()
}

func rawPostBytes(target, headers string, body []byte) string {
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: shepherd\r\n%sContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n",
		target, headers, len(body)) + string(body)
}

// TestEncodedBodiesDecoded: a model request sent with Content-Encoding gzip,
// deflate, br or zstd reaches the upstream decoded, without
// Content-Encoding and with the decoded length, on every API, hooks on and
// off.
func TestEncodedBodiesDecoded(t *testing.T) {
	for _, hooks := range []bool{false, true} {
		up := newRecordingUpstream(t)
		addr := startTrustProxy(t, up, func(c *config.Config) { c.Topics.Enabled = hooks })
		n := 0
		for _, api := range trustAPIs() {
			for _, coding := range []string{"gzip", "deflate", "br", "zstd"} {
				out, _ := rawExchange(t, addr, rawPostBytes(api.path, api.headers+"Content-Encoding: "+coding+"\r\n",
					encode(t, coding, []byte(api.body))), 10*time.Second)
				require.True(t, strings.HasPrefix(out, "HTTP/1.1 200 "), "%s %s hooks=%v: %q", api.name, coding, hooks, out)
				n++
				reqs := up.requests()
				require.Len(t, reqs, n)
				got := reqs[n-1]
				require.Empty(t, got.Header.Get("Content-Encoding"), "Content-Encoding forwarded")
				if !hooks {
					require.Equal(t, api.body, string(got.Body), "%s %s", api.name, coding)
				} else {
					require.True(t, strings.HasPrefix(string(got.Body), "{"), "%s %s: %q", api.name, coding, got.Body)
				}
			}
		}
		// Two stacked codings, applied gzip then br.
		api := trustAPIs()[0]
		body := encode(t, "br", encode(t, "gzip", []byte(api.body)))
		out, _ := rawExchange(t, addr, rawPostBytes(api.path, api.headers+"Content-Encoding: gzip, br\r\n", body), 10*time.Second)
		require.True(t, strings.HasPrefix(out, "HTTP/1.1 200 "), out)
	}
}

// TestEncodedBodyLimits: a compressed body that expands past
// limits.max_body_bytes gets 413, an unknown coding 415, a corrupt one 400,
// each in the API's error shape, and none reaches the upstream.
func TestEncodedBodyLimits(t *testing.T) {
	up := newRecordingUpstream(t)
	addr := startTrustProxy(t, up, func(c *config.Config) { c.Limits.MaxBodyBytes = 1 << 20 })
	for _, api := range trustAPIs() {
		// 8 MiB of JSON whitespace inside a valid body: a few KB compressed.
		bomb := []byte(strings.Replace(api.body, "{", "{"+strings.Repeat(" ", 8<<20), 1))
		for _, coding := range []string{"gzip", "deflate", "br", "zstd"} {
			enc := encode(t, coding, bomb)
			require.Less(t, len(enc), 1<<20)
			out, _ := rawExchange(t, addr, rawPostBytes(api.path, api.headers+"Content-Encoding: "+coding+"\r\n", enc), 10*time.Second)
			require.True(t, strings.HasPrefix(out, "HTTP/1.1 413 "), "%s %s: %q", api.name, coding, out)
			require.Contains(t, rawBody(out), "error")
		}
		out, _ := rawExchange(t, addr, rawPostBytes(api.path, api.headers+"Content-Encoding: compress\r\n", []byte(api.body)), 10*time.Second)
		require.True(t, strings.HasPrefix(out, "HTTP/1.1 415 "), "%s: %q", api.name, out)
		require.Contains(t, rawBody(out), "Content-Encoding")
		out, _ = rawExchange(t, addr, rawPostBytes(api.path, api.headers+"Content-Encoding: gzip\r\n", []byte(api.body)), 10*time.Second)
		require.True(t, strings.HasPrefix(out, "HTTP/1.1 400 "), "%s: %q", api.name, out)
		api.shape(t, rawBody(out))
	}
	require.Empty(t, up.requests())
}

// TestDuplicateTopLevelKeyRefused: a body repeating a top-level key the
// proxy reads (providers take the last, shepherd's hooks the first) gets 400
// naming the key, on every API with hooks on and off, plain or gzipped.
func TestDuplicateTopLevelKeyRefused(t *testing.T) {
	for _, hooks := range []bool{false, true} {
		up := newRecordingUpstream(t)
		addr := startTrustProxy(t, up, func(c *config.Config) { c.Topics.Enabled = hooks })
		for _, api := range trustAPIs() {
			key := api.d.HistoryPath() // the body's last member
			i := strings.Index(api.body, `"`+key+`"`)
			j := strings.LastIndex(api.body, "}")
			member := api.body[i:j]
			for _, dup := range []string{
				api.body[:j] + "," + member + "}",
				api.body[:j] + `,"model":"other","model":"x"}`,
				api.body[:j] + `,"stream":false,"stream":true}`,
			} {
				for _, gz := range []bool{false, true} {
					body, hdr := []byte(dup), api.headers
					if gz {
						body, hdr = encode(t, "gzip", body), hdr+"Content-Encoding: gzip\r\n"
					}
					out, _ := rawExchange(t, addr, rawPostBytes(api.path, hdr, body), 10*time.Second)
					require.True(t, strings.HasPrefix(out, "HTTP/1.1 400 "), "%s hooks=%v %s: %q", api.name, hooks, dup, out)
					api.shape(t, rawBody(out))
					require.Contains(t, rawBody(out), "duplicate top-level key")
				}
			}
			out, _ := rawExchange(t, addr, rawPostBytes(api.path, api.headers, []byte(api.body[:j]+`,"`+"x"+`":{"`+key+`":1,"`+key+`":2}}`)), 10*time.Second)
			require.False(t, strings.HasPrefix(out, "HTTP/1.1 400 "), "nested duplicates are the upstream's business: %q", out)
		}
		require.Len(t, up.requests(), 4, "only the nested-duplicate requests reach the upstream")
	}
}
