package diag_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

var overheadValue = regexp.MustCompile(`^\d+\.\d{3}ms$`)

// rawReply is an HTTP/1.1 response read off the wire: its header block,
// its body with the chunked framing taken off, and its trailer section.
type rawReply struct {
	Head    string
	Body    []byte
	Trailer string
	Chunked bool
}

// rawPost sends one request over a fresh connection (Connection: close)
// and reads the response's bytes as they came.
func rawPost(t *testing.T, base, path, body string, header map[string]string) rawReply {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	var req strings.Builder
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n", path, u.Host, len(body))
	for k, v := range header {
		fmt.Fprintf(&req, "%s: %s\r\n", k, v)
	}
	req.WriteString("\r\n")
	req.WriteString(body)
	_, err = io.WriteString(conn, req.String())
	require.NoError(t, err)
	raw, err := io.ReadAll(conn)
	require.NoError(t, err)

	head, rest, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	require.True(t, ok, "no header block: %q", raw)
	out := rawReply{Head: string(head)}
	if !strings.Contains(strings.ToLower(out.Head), "transfer-encoding: chunked") {
		out.Body = rest
		return out
	}
	out.Chunked = true
	r := bufio.NewReader(bytes.NewReader(rest))
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err, "chunk size line")
		size, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
		require.NoError(t, err, "chunk size %q", line)
		if size == 0 {
			tail, err := io.ReadAll(r)
			require.NoError(t, err)
			require.True(t, strings.HasSuffix(string(tail), "\r\n"), "the chunked body ends with an empty line: %q", tail)
			out.Trailer = strings.TrimSuffix(string(tail), "\r\n")
			return out
		}
		chunk := make([]byte, size+2)
		_, err = io.ReadFull(r, chunk)
		require.NoError(t, err)
		require.Equal(t, "\r\n", string(chunk[size:]))
		out.Body = append(out.Body, chunk[:size]...)
	}
}

// headerValue is the value of header name in a header block ("" if none).
func headerValue(head, name string) string {
	for _, line := range strings.Split(head, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), name) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestOverheadTrailerOnStreams: on every API, a streamed turn whose client
// sent "TE: trailers" ends its chunked body with the X-Shepherd-Overhead
// trailer (declared in a Trailer header), equal to request.finished's
// overhead_ms; without TE the reply has neither and its stream bytes are
// the same.
func TestOverheadTrailerOnStreams(t *testing.T) {
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			r := newRig(t, nil)
			send := func(sid string, te bool) rawReply {
				a := kit.NewAgent(d, r.URL, nil)
				a.Request.Stream = true
				a.User("hello")
				r.Mock.Script(mock.Reply{Text: "streamed answer"})
				h := d.Headers()
				h["X-Session-Id"] = sid
				if te {
					h["TE"] = "trailers"
				}
				return rawPost(t, r.URL, d.Path("", true), a.Body(), h)
			}
			with := send("ov-te-"+d.Name(), true)
			require.Contains(t, with.Head, " 200 ")
			require.True(t, with.Chunked)
			require.Equal(t, "X-Shepherd-Overhead", headerValue(with.Head, "Trailer"))
			require.Equal(t, "no", headerValue(with.Head, "X-Accel-Buffering"))
			require.Empty(t, headerValue(with.Head, "X-Shepherd-Overhead"), "a stream's overhead is a trailer, not a header")
			trailer := headerValue(with.Trailer, "X-Shepherd-Overhead")
			require.Regexp(t, overheadValue, trailer, "trailer section %q", with.Trailer)
			rep, err := d.ParseStream(with.Body)
			require.NoError(t, err)
			require.Equal(t, "streamed answer", rep.Text)

			fin := r.finished(t, 1)[0]
			ms, ok := fin.Data["overhead_ms"].(float64)
			require.True(t, ok, "overhead_ms in %v", fin.Data)
			require.Equal(t, fmt.Sprintf("%.3fms", ms), trailer, "the trailer and the feed report one measurement")

			without := send("ov-plain-"+d.Name(), false)
			require.True(t, without.Chunked)
			require.Empty(t, headerValue(without.Head, "Trailer"))
			require.Empty(t, without.Trailer, "no trailer section")
			require.Equal(t, normalizeIDs(with.Body), normalizeIDs(without.Body), "the stream's bytes do not depend on TE")
		})
	}
}

// ids are the per-reply identifiers and timestamps the mock generates.
var ids = regexp.MustCompile(`"(id|created|created_at|responseId|response_id|item_id|sequence_number)":\s*("[^"]*"|\d+)`)

func normalizeIDs(b []byte) string { return ids.ReplaceAllString(string(b), `"$1":_`) }

// TestOverheadHeaderOnJSON: a whole (JSON) reply carries
// X-Shepherd-Overhead as a header, request.finished and the access log
// line the same value.
func TestOverheadHeaderOnJSON(t *testing.T) {
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			r := newRig(t, nil)
			a := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": "ov-json-" + d.Name(), "TE": "trailers"})
			a.User("hello")
			r.Mock.Script(mock.Reply{Text: "whole answer"})
			_, resp, _ := a.Send(t)
			v := resp.Header.Get("X-Shepherd-Overhead")
			require.Regexp(t, overheadValue, v)
			require.Empty(t, resp.Header.Get("Trailer"), "no trailer on a whole reply")
			require.Empty(t, resp.Trailer)

			ms, ok := r.finished(t, 1)[0].Data["overhead_ms"].(float64)
			require.True(t, ok)
			require.Equal(t, fmt.Sprintf("%.3fms", ms), v)
			logged := r.Logs.FilterMessage("request").All()
			require.NotEmpty(t, logged)
			require.Equal(t, ms, logged[len(logged)-1].ContextMap()["overhead_ms"], "the access log line")
		})
	}
}
