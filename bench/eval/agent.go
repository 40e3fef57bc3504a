package eval

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/shepherd-proxy/shepherd/test/kit"
)

// Exchange is one agent request (one turn, in shepherd's terms: a round
// of the tool loop) and what came of it.
type Exchange struct {
	// Prompt is the index of the user turn it belongs to.
	Prompt int
	// Body is the request the agent sent (shepherd's input).
	Body []byte
	// Status is the HTTP status; Reply is read when it is 200.
	Status int
	Reply  kit.Reply
	// Err says why the exchange failed ("" when it did not).
	Err string
	// Upstream are the requests shepherd sent the provider for it: the
	// agent's own (as shepherd edited it), follow-ups and continuations.
	Upstream []Upstream
	Duration time.Duration
}

// DefaultLimit is the output limit of a turn whose prompt sets none:
// enough for a whole file in a write_file call.
const DefaultLimit = 4096

// agent is the eval's coding agent on one wire API: it keeps the
// conversation, sends it whole on every turn, and runs the model's tool
// calls in its workspace.
type agent struct {
	d       kit.Driver
	url     string // shepherd's base URL
	headers map[string]string
	req     kit.Request
	ws      *Workspace
	tap     *tap
	client  *http.Client
	history []string
}

// send sends the conversation with output limit limit and reads the reply.
func (a *agent) send(ctx context.Context, prompt, limit int) (ex Exchange) {
	r := a.req
	r.History = a.history
	r.Limit = limit
	if limit == 0 {
		r.Limit = DefaultLimit
	}
	body := []byte(a.d.Request(r))
	if explicitCache[a.d.Name()] {
		body = cacheBreakpoints(body)
	}
	ex = Exchange{Prompt: prompt, Body: body}
	before := a.tap.Len()
	start := time.Now()
	defer func() { ex.Duration = time.Since(start) }()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url+a.d.Path(a.req.Model, false), bytes.NewReader(body))
	if err != nil {
		ex.Err = err.Error()
		return ex
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range a.headers {
		req.Header.Set(k, v)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		ex.Err = err.Error()
		return ex
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(resp.Body)
	ex.Status = resp.StatusCode
	ex.Upstream = a.tap.Since(before)
	switch {
	case err != nil:
		ex.Err = fmt.Sprintf("reading the reply: %v", err)
	case resp.StatusCode != http.StatusOK:
		ex.Err = fmt.Sprintf("status %d: %s", resp.StatusCode, clip(string(reply), 300))
	default:
		if ex.Reply, err = a.d.ParseReply(reply); err != nil {
			ex.Err = err.Error()
			return ex
		}
		a.history = append(a.history, a.d.Echo(reply)...)
	}
	return ex
}

// results appends the results of calls (run in the workspace) to the
// conversation, joined into one message where the API carries all the
// results of a reply in one user turn.
func (a *agent) results(r kit.Reply) {
	var items []string
	for _, c := range r.Calls {
		items = append(items, a.d.ToolResult(c.ID, c.Name, a.ws.Run(c.Name, c.Args)))
	}
	a.history = append(a.history, joinUserItems(items)...)
}

// explicitCache lists the APIs whose prompt cache needs breakpoints the
// agent marks (Anthropic's cache_control); the others cache
// automatically.
var explicitCache = map[string]bool{"anthropic": true}

// cacheBreakpoints marks an Anthropic request as Claude Code does: the
// system prompt as a block with cache_control, and the last block of the
// last message. String contents become one text block, on every turn, so
// a message keeps its bytes when the breakpoint moves on.
func cacheBreakpoints(body []byte) []byte {
	const mark = `{"type":"ephemeral"}`
	if sys := gjson.GetBytes(body, "system"); sys.Type == gjson.String {
		body, _ = sjson.SetRawBytes(body, "system", []byte(`[{"type":"text","text":`+kit.Quote(sys.String())+`,"cache_control":`+mark+`}]`))
	}
	msgs := gjson.GetBytes(body, "messages").Array()
	for i, m := range msgs {
		if c := m.Get("content"); c.Type == gjson.String {
			body, _ = sjson.SetRawBytes(body, fmt.Sprintf("messages.%d.content", i), []byte(`[{"type":"text","text":`+kit.Quote(c.String())+`}]`))
		}
	}
	if n := len(msgs); n > 0 {
		last := gjson.GetBytes(body, fmt.Sprintf("messages.%d.content.#", n-1)).Int()
		if last > 0 {
			body, _ = sjson.SetRawBytes(body, fmt.Sprintf("messages.%d.content.%d.cache_control", n-1, last-1), []byte(mark))
		}
	}
	return body
}

// withoutBreakpoints removes the cache_control markers of an Anthropic
// request's messages (the marker is not part of the prompt).
func withoutBreakpoints(body []byte) []byte {
	for i, m := range gjson.GetBytes(body, "messages").Array() {
		for j, b := range m.Get("content").Array() {
			if b.Get("cache_control").Exists() {
				body, _ = sjson.DeleteBytes(body, fmt.Sprintf("messages.%d.content.%d.cache_control", i, j))
			}
		}
	}
	return body
}

// joinUserItems joins consecutive user messages that carry an array of
// parts (Anthropic tool_result blocks, Gemini functionResponse parts) into
// one, as the SDKs send the results of one reply. Other items (Chat tool
// messages, Responses function_call_output items) stay as they are.
func joinUserItems(items []string) []string {
	if len(items) < 2 {
		return items
	}
	key := ""
	for _, it := range items {
		k := ""
		for _, cand := range []string{"content", "parts"} {
			if gjson.Get(it, cand).IsArray() {
				k = cand
			}
		}
		if gjson.Get(it, "role").String() != "user" || k == "" || (key != "" && k != key) {
			return items
		}
		key = k
	}
	var parts []string
	for _, it := range items {
		parts = append(parts, kit.RawList(gjson.Get(it, key))...)
	}
	joined, _ := sjson.SetRaw(items[0], key, "["+strings.Join(parts, ",")+"]")
	return []string{joined}
}

// clip shortens s to at most n bytes.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
