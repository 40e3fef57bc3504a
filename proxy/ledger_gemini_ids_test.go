package proxy_test

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// geminiPair is a functionCall or functionResponse part: its name and id.
type geminiPair struct{ name, id string }

// geminiParts returns the (name, id) of the parts of content c holding key
// (functionCall or functionResponse), sorted by id then name.
func geminiParts(c gjson.Result, key string) []geminiPair {
	var out []geminiPair
	for _, p := range c.Get("parts").Array() {
		if v := p.Get(key); v.IsObject() {
			out = append(out, geminiPair{v.Get("name").String(), v.Get("id").String()})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].id != out[j].id {
			return out[i].id < out[j].id
		}
		return out[i].name < out[j].name
	})
	return out
}

// TestLedgerGeminiReplayKeepsClientCallIDs: the model calls Read twice
// (different files, no ids, the signature on the first) and Write between
// them; shepherd refuses the Write. gemini-cli names the two Reads it gets
// with its own ids and answers them under those ids. On every later request
// the replayed model turn carries the client's ids on the two Reads (matched
// by name and arguments, whatever the spelling of the arguments), no id on
// the Write, whose refusal shepherd writes without one: every functionCall
// of the turn pairs with a functionResponse of the same name and id. The
// signature stays on its part, byte for byte, and the history is
// append-only.
func TestLedgerGeminiReplayKeepsClientCallIDs(t *testing.T) {
	api := topicAPINamed(t, "gemini")
	client := ledgerClientOf(t, "gemini")
	h := newIntentHarness(t, intentWorkspace(t, intentPolicy("INT-001")))
	const readB = `{"file_path":"src/b.go","limit":10}`
	h.mock.Script(
		mock.Reply{ID: "m1", Thinking: &mock.Thinking{Text: "plan it", Signature: "sig-m1"}, ToolCalls: []mock.ToolCall{
			{Name: "Read", Args: readSrcArgs},
			{Name: "Write", Args: writeDocsArgs},
			{Name: "Read", Args: readB},
		}},
		mock.Reply{ID: "m2", Text: "Read both."},
		mock.Reply{ID: "m3", Text: "Still here."},
	)
	hdr := map[string]string{"X-Session-Id": "ledger-gemini-ids"}
	for k, v := range api.headers {
		hdr[k] = v
	}
	var history []string
	send := func() []byte {
		t.Helper()
		resp, body := do(t, "POST", h.URL+api.path, api.request(history), hdr)
		require.Equal(t, 200, resp.StatusCode, string(body))
		return body
	}
	history = append(history, api.user("read and document"))
	r1 := send()
	echo := client.echo(t, r1)
	require.Len(t, echo, 1)
	ids := gjson.Get(echo[0], `parts.#.functionCall.id`).Array()
	require.Len(t, ids, 2, "the client runs the two Reads: %s", echo[0])
	idA, idB := ids[0].String(), ids[1].String()
	require.NotEqual(t, idA, idB)
	history = append(history, echo...)
	history = append(history, `{"role":"user","parts":[`+
		`{"functionResponse":{"id":"`+idA+`","name":"Read","response":{"output":"a"}}},`+
		`{"functionResponse":{"id":"`+idB+`","name":"Read","response":{"output":"b"}}}]}`)
	r2 := send()
	require.Equal(t, "Read both.", api.text(r2))
	history = append(history, client.echo(t, r2)...)
	history = append(history, api.user("go on"))
	require.Equal(t, "Still here.", api.text(send()))

	reqs := h.mock.Requests()
	require.Len(t, reqs, 3)
	requireAllAppendOnly(t, api, reqs)
	for _, i := range []int{1, 2} {
		body := reqs[i].Body
		turn := gjson.GetBytes(body, "contents.1")
		require.Equal(t, []geminiPair{{"Write", ""}, {"Read", idA}, {"Read", idB}},
			geminiParts(turn, "functionCall"), "request %d: the client's ids on the calls it ran, none on the refused one", i+1)
		require.Equal(t, geminiParts(turn, "functionCall"), geminiParts(gjson.GetBytes(body, "contents.2"), "functionResponse"),
			"request %d: every call pairs with a response of the same name and id", i+1)
		parts := turn.Get("parts").Array()
		require.Len(t, parts, 4, "request %d: the thought and three calls", i+1)
		require.Equal(t, `{"functionCall":{"name":"Read","args":{"file_path":"src/a.go"},"id":"`+idA+`"},"thoughtSignature":"c2lnLW0x"}`,
			parts[1].Raw, "request %d: the signature stays on its part, byte for byte", i+1)
		require.Equal(t, `{"functionCall":{"name":"Write","args":{"content":"# X\n","file_path":"docs/x.md"}}}`,
			parts[2].Raw, "request %d: the refused call as the model sent it", i+1)
		require.NotContains(t, string(body), "skip_thought_signature_validator")
	}
}
