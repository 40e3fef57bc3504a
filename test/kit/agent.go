package kit

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Client is an HTTP client that shows bytes as they are on the wire: no
// transparent decompression.
var Client = &http.Client{
	Timeout: 30 * time.Second,
	Transport: &http.Transport{
		DisableCompression:  true,
		MaxIdleConnsPerHost: 16,
	},
}

// Agent is one raw-HTTP agent conversation on a wire API: it keeps the
// history, sends it whole on every turn, and echoes each reply back the
// way the official SDKs do.
type Agent struct {
	D Driver
	// URL is the base URL requests go to (shepherd or a provider).
	URL string
	// Header is sent with every request, on top of D's credentials
	// (e.g. X-Session-Id).
	Header map[string]string
	// Request is the template of every turn's request; Send fills its
	// History.
	Request Request
	History []string
}

// NewAgent starts a conversation on d against url with the scenarios'
// usual request: system prompt "You are terse." and the Read tool.
func NewAgent(d Driver, url string, header map[string]string) *Agent {
	return &Agent{D: d, URL: url, Header: header, Request: Request{System: "You are terse.", Tools: []Tool{ReadTool}}}
}

// User appends a user message.
func (a *Agent) User(text string) { a.History = append(a.History, a.D.User(text)) }

// ToolResult appends the agent's result content for its call id (of tool
// name).
func (a *Agent) ToolResult(id, name, content string) {
	a.History = append(a.History, a.D.ToolResult(id, name, content))
}

// Body is the next turn's request body.
func (a *Agent) Body() string {
	r := a.Request
	r.History = a.History
	return a.D.Request(r)
}

// Post sends the next turn and returns the response with its body read. A
// 200 non-streaming reply is echoed into the history; a streamed one is
// left to the caller.
func (a *Agent) Post(t testing.TB) (*http.Response, []byte) {
	t.Helper()
	resp, body := Do(t, "POST", a.URL+a.D.Path(a.Request.Model, a.Request.Stream), a.Body(), a.headers())
	if resp.StatusCode == http.StatusOK && !a.Request.Stream {
		a.History = append(a.History, a.D.Echo(body)...)
	}
	return resp, body
}

// Send sends the next turn (non-streaming), requires a 200 and returns the
// reply as the agent reads it.
func (a *Agent) Send(t testing.TB) (Reply, *http.Response, []byte) {
	t.Helper()
	resp, body := a.Post(t)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d: %s", a.D.Name(), resp.StatusCode, body)
	}
	r, err := a.D.ParseReply(body)
	if err != nil {
		t.Fatalf("%s: %v", a.D.Name(), err)
	}
	return r, resp, body
}

func (a *Agent) headers() map[string]string {
	h := a.D.Headers()
	for k, v := range a.Header {
		h[k] = v
	}
	return h
}

// Do sends a request with Client and returns the response with its body
// read. Header names are sent exactly as spelled (e.g. session_id).
func Do(t testing.TB, method, url, body string, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatalf("kit: %v", err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header[k] = []string{v}
	}
	resp, err := Client.Do(req)
	if err != nil {
		t.Fatalf("kit: %s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("kit: %s %s: read the body: %v", method, url, err)
	}
	return resp, b
}
