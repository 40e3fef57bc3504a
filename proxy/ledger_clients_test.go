package proxy_test

// The ledger replays shepherd's refusals into the model's history even when
// the client sends its history back rewritten, the way real clients do:
// gemini-cli names the calls the Gemini API sent without ids, strips thought
// parts and adds a synthetic thoughtSignature; SDKs re-serialise arguments
// and add or drop Chat and Responses fields; Claude Code moves cache_control.

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// ledgerClient rewrites the model's reply into the history items a client
// sends back, as that client does.
type ledgerClient struct {
	api  string
	echo func(t *testing.T, reply []byte) []string
}

// reserialise decodes item and encodes it again after edit: keys sorted,
// whitespace added, as a client that keeps its history as objects does.
func reserialise(t *testing.T, item string, edit func(map[string]any)) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(item), &m))
	edit(m)
	b, err := json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	return string(b)
}

// reformatArgs re-encodes a JSON arguments string with other whitespace.
func reformatArgs(t *testing.T, args string) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(args), &v))
	b, err := json.MarshalIndent(v, "", "\t")
	require.NoError(t, err)
	return string(b)
}

func ledgerClients() []ledgerClient {
	return []ledgerClient{
		{api: "anthropic", echo: func(t *testing.T, r []byte) []string {
			item := `{"role":"assistant","content":` + gjson.GetBytes(r, "content").Raw + `}`
			return []string{reserialise(t, item, func(m map[string]any) {
				blocks := m["content"].([]any)
				blocks[len(blocks)-1].(map[string]any)["cache_control"] = map[string]any{"type": "ephemeral"}
			})}
		}},
		{api: "openai_chat", echo: func(t *testing.T, r []byte) []string {
			return []string{reserialise(t, gjson.GetBytes(r, "choices.0.message").Raw, func(m map[string]any) {
				m["refusal"], m["annotations"] = nil, []any{}
				if m["content"] == nil {
					m["content"] = ""
				}
				calls, _ := m["tool_calls"].([]any)
				for _, c := range calls {
					fn := c.(map[string]any)["function"].(map[string]any)
					fn["arguments"] = reformatArgs(t, fn["arguments"].(string))
				}
			})}
		}},
		{api: "openai_responses", echo: func(t *testing.T, r []byte) []string {
			var out []string
			for _, it := range rawList(gjson.GetBytes(r, "output")) {
				if gjson.Get(it, "type").String() == "reasoning" {
					continue // a stateless client drops reasoning it cannot resend
				}
				out = append(out, reserialise(t, it, func(m map[string]any) {
					delete(m, "id")
					delete(m, "status")
					if a, ok := m["arguments"].(string); ok {
						m["arguments"] = reformatArgs(t, a)
					}
				}))
			}
			return out
		}},
		{api: "gemini", echo: func(t *testing.T, r []byte) []string {
			return []string{reserialise(t, gjson.GetBytes(r, "candidates.0.content").Raw, func(m map[string]any) {
				var parts []any
				n := 0
				for _, p := range m["parts"].([]any) {
					part := p.(map[string]any)
					if part["thought"] == true {
						continue // gemini-cli keeps no thoughts in its history
					}
					if fc, ok := part["functionCall"].(map[string]any); ok {
						if _, has := fc["id"]; !has {
							fc["id"] = fmt.Sprintf("%s_1764090000000_%d", fc["name"], n)
						}
						if n == 0 && part["thoughtSignature"] == nil {
							part["thoughtSignature"] = "skip_thought_signature_validator"
						}
						n++
					}
					parts = append(parts, part)
				}
				m["parts"] = parts
			})}
		}},
	}
}

// ledgerClientOf is the ledgerClients() entry of api.
func ledgerClientOf(t *testing.T, api string) ledgerClient {
	t.Helper()
	for _, c := range ledgerClients() {
		if c.api == api {
			return c
		}
	}
	t.Fatalf("no ledger client of %s", api)
	return ledgerClient{}
}

// callID is the id the client gave to its call named name in echo.
func callID(t *testing.T, api string, echo []string, name string) string {
	t.Helper()
	id, ok := kit.Get(t, api).CallID(echo, name)
	if !ok {
		t.Fatalf("no call %s in %v", name, echo)
	}
	return id
}

// TestLedgerReplaySurvivesClientRewrites: the model writes out of scope and
// reads in one reply; shepherd refuses the Write. The client sends the reply
// back rewritten; the next two requests still carry the model's turn as the
// model produced it, with the refusal, and the history stays append-only.
// On Gemini the calls come without ids and the signature is on the refused
// call: the forwarded turn has it there, byte for byte, and of the client's
// additions only the id of the call it ran, which its functionResponse
// carries.
func TestLedgerReplaySurvivesClientRewrites(t *testing.T) {
	for _, c := range ledgerClients() {
		t.Run(c.api, func(t *testing.T) {
			t.Parallel()
			api := topicAPINamed(t, c.api)
			h := newIntentHarness(t, intentWorkspace(t, intentPolicy("INT-001")))
			write := mock.ToolCall{ID: "w1", Name: "Write", Args: writeDocsArgs}
			read := mock.ToolCall{ID: "r1", Name: "Read", Args: readSrcArgs}
			if api.d.OptionalCallIDs() { // the model's calls come without ids
				write.ID, read.ID = "", ""
			}
			h.mock.Script(
				mock.Reply{ID: "m1", Thinking: &mock.Thinking{Text: "plan it", Signature: "sig-m1"}, ToolCalls: []mock.ToolCall{write, read}},
				mock.Reply{ID: "m2", Text: "Read it."},
				mock.Reply{ID: "m3", Text: "Still here."},
			)
			hdr := map[string]string{"X-Session-Id": "ledger-" + c.api}
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
			history = append(history, api.user("document and fix"))
			r1 := send()
			echo := c.echo(t, r1)
			require.Len(t, rawReplyCalls(t, c.api, r1), 1, "the agent gets the Read only")
			history = append(history, echo...)
			history = append(history, api.toolResult(callID(t, c.api, echo, "Read"), "Read"))
			r2 := send()
			require.Equal(t, "Read it.", api.text(r2))
			history = append(history, c.echo(t, r2)...)
			history = append(history, api.user("go on"))
			require.Equal(t, "Still here.", api.text(send()))

			reqs := h.mock.Requests()
			require.Len(t, reqs, 3)
			requireAllAppendOnly(t, api, reqs)
			const reason = `"docs/x.md" is outside the scope of intent INT-001`
			for _, i := range []int{1, 2} {
				requireRefusal(t, c.api, reqs[i].Body, write.ID, reason)
			}
			if !api.d.OptionalCallIDs() {
				return
			}
			turn := gjson.GetBytes(reqs[1].Body, "contents.1").Raw
			require.Equal(t, `{"role":"model","parts":[{"text":"plan it","thought":true},`+
				`{"functionCall":{"name":"Write","args":{"content":"# X\n","file_path":"docs/x.md"}},"thoughtSignature":"c2lnLW0x"},`+
				`{"functionCall":{"name":"Read","args":{"file_path":"src/a.go"},"id":"`+callID(t, c.api, echo, "Read")+`"}}]}`, turn,
				"the model's turn as it produced it: thoughts, signature on the first call, "+
					"the client's id on the call the client ran (its functionResponse carries it) and on no other")
			require.NotContains(t, string(reqs[1].Body), "skip_thought_signature_validator")
			require.NotContains(t, string(reqs[2].Body), "skip_thought_signature_validator")
		})
	}
}
