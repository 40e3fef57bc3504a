package agents

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// feedEvent is one SSE frame of an event feed, as a console reads it.
type feedEvent struct {
	// ID and Type are the frame's id: and event: fields.
	ID, Type string
	// Data is the frame's data: the whole event as JSON.
	Data gjson.Result
	// Received is when the frame reached the client.
	Received time.Time
}

func (e feedEvent) String() string { return e.Type + " " + e.Data.Get("data").Raw }

// feedClient follows an SSE feed over a real HTTP connection in the
// background and keeps every frame with the time it arrived.
type feedClient struct {
	mu     sync.Mutex
	events []feedEvent
	wake   chan struct{} // closed and replaced on each frame
	err    error         // why the stream ended
	done   chan struct{}
}

// followFeed opens the feed at base+path (e.g. /shepherd/v1/events) and
// reads it until the test ends. It fails the test unless the server answers
// 200 with Content-Type text/event-stream.
func followFeed(t *testing.T, base, path string) *feedClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		require.NoError(t, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		cancel()
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"), resp.Header.Get("Content-Type"))
	c := &feedClient{wake: make(chan struct{}), done: make(chan struct{})}
	go c.read(resp.Body)
	t.Cleanup(func() {
		cancel()
		_ = resp.Body.Close()
		<-c.done
	})
	return c
}

// read parses SSE frames (id:, event:, data: lines, a blank line ends a
// frame, lines starting with ':' are comments) until the stream ends.
func (c *feedClient) read(body io.Reader) {
	defer close(c.done)
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var id, typ string
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() > 0 {
				c.add(feedEvent{ID: id, Type: typ, Data: gjson.ParseBytes(bytes.Clone(data.Bytes())), Received: time.Now()})
			}
			id, typ = "", ""
			data.Reset()
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				id = value
			case "event":
				typ = value
			case "data":
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.WriteString(value)
			}
		}
	}
	c.mu.Lock()
	c.err = sc.Err()
	if c.err == nil {
		c.err = io.EOF
	}
	close(c.wake)
	c.mu.Unlock()
}

func (c *feedClient) add(e feedEvent) {
	c.mu.Lock()
	c.events = append(c.events, e)
	close(c.wake)
	c.wake = make(chan struct{})
	c.mu.Unlock()
}

// snapshot returns the frames received so far.
func (c *feedClient) snapshot() []feedEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]feedEvent(nil), c.events...)
}

// waitFor returns the first frame from index `from` on that match satisfies,
// and its index, waiting up to timeout (failing the test then, with the
// frames received).
func (c *feedClient) waitFor(t *testing.T, timeout time.Duration, from int, what string, match func(feedEvent) bool) (feedEvent, int) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		evs, wake, err := c.events, c.wake, c.err
		c.mu.Unlock()
		for i := from; i < len(evs); i++ {
			if match(evs[i]) {
				return evs[i], i
			}
		}
		if err != nil {
			t.Fatalf("feed ended (%v) before %s; got:\n%s", err, what, listEvents(evs))
		}
		select {
		case <-wake:
		case <-deadline.C:
			t.Fatalf("no %s on the feed within %s; got:\n%s", what, timeout, listEvents(evs))
		}
	}
}

// ofType matches frames of type typ (its event: field and the JSON's type).
func ofType(typ string) func(feedEvent) bool {
	return func(e feedEvent) bool { return e.Type == typ && e.Data.Get("type").String() == typ }
}

func listEvents(evs []feedEvent) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "  %s %s\n", e.ID, e)
	}
	return b.String()
}

// decideApproval posts a decision ("approve" or "deny") on a held call
// through the approvals API and returns the approval it answers.
func decideApproval(t *testing.T, base, session, approval, decision, note string) gjson.Result {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"decision": decision, "note": note, "by": "console"})
	u := fmt.Sprintf("%s/shepherd/v1/sessions/%s/approvals/%s", base, url.PathEscape(session), url.PathEscape(approval))
	resp, err := http.Post(u, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s %s", decision, b)
	return gjson.ParseBytes(b)
}

// getJSON GETs an admin endpoint and returns its 200 JSON answer.
func getJSON(t *testing.T, u string) gjson.Result {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", u, b)
	return gjson.ParseBytes(b)
}

// tryDecide is decideApproval that returns the status and body, whatever
// the status.
func tryDecide(t *testing.T, base, session, approval, decision string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"decision": decision, "by": "console"})
	u := fmt.Sprintf("%s/shepherd/v1/sessions/%s/approvals/%s", base, url.PathEscape(session), url.PathEscape(approval))
	resp, err := http.Post(u, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}
