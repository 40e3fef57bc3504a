package gemini

import (
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// TestGeminiAdoptAgentCallIDs: the agent's copy holds its calls reordered,
// with its own ids, re-spelled arguments and a synthetic signature. The
// replayed calls it also holds take its ids in order (duplicates pair up
// first to first), the refused call and an earlier reply's shepherd call
// keep none, a call with the API's id keeps it, and the rest of every item
// stays byte for byte.
func TestGeminiAdoptAgentCallIDs(t *testing.T) {
	m1 := `{"role":"model","parts":[{"functionCall":{"name":"create_new_topic","args":{"t":"x"}}}]}`
	u1 := `{"role":"user","parts":[{"functionResponse":{"name":"create_new_topic","response":{"content":"ok"}}}]}`
	m2 := `{"role":"model","parts":[{"text":"t","thought":true},` +
		`{"functionCall":{"name":"Read","args":{"p":"a","n":1}},"thoughtSignature":"SIG"},` +
		`{"functionCall":{"name":"rm","args":{"p":"a"}}},` +
		`{"functionCall":{"name":"Read","args":{"p":"b"}}},` +
		`{"functionCall":{"name":"Read","args":{"p":"a","n":1}}},` +
		`{"functionCall":{"id":"api-1","name":"Glob","args":{}}}]}`
	agent := `{"role":"model","parts":[` +
		`{"functionCall":{"id":"Read_1_0","name":"Read","args":{"p":"b"}},"thoughtSignature":"skip"},` +
		`{"functionCall":{"args":{"n":1.0,"p":"\u0061"},"id":"Read_1_1","name":"Read"}},` +
		`{"functionCall":{"id":"Read_1_2","name":"Read","args":{"n":1,"p":"a"}}},` +
		`{"functionCall":{"id":"api-1","name":"Glob","args":{}}},` +
		`{"functionCall":{"id":"create_new_topic_1_3","name":"create_new_topic","args":{"t":"x"}}}]}`
	body := []byte(gmBody(gmU0, agent))
	items := [][]byte{[]byte(m1), []byte(u1), []byte(m2)}
	out, err := gemTC.(rewrite.AgentCallIDs).AdoptAgentCallIDs(body, 1, items)
	require.NoError(t, err)
	require.Equal(t, m2, string(items[2]), "the input is not modified")
	require.Equal(t, m1, string(out[0]), "an earlier reply's calls were shepherd's: no id")
	require.Equal(t, u1, string(out[1]))
	require.Equal(t, `{"role":"model","parts":[{"text":"t","thought":true},`+
		`{"functionCall":{"name":"Read","args":{"p":"a","n":1},"id":"Read_1_1"},"thoughtSignature":"SIG"},`+
		`{"functionCall":{"name":"rm","args":{"p":"a"}}},`+
		`{"functionCall":{"name":"Read","args":{"p":"b"},"id":"Read_1_0"}},`+
		`{"functionCall":{"name":"Read","args":{"p":"a","n":1},"id":"Read_1_2"}},`+
		`{"functionCall":{"id":"api-1","name":"Glob","args":{}}}]}`, string(out[2]))

	t.Run("nothing to adopt", func(t *testing.T) {
		noIDs := []byte(gmBody(gmU0, gmM1))
		got, err := gemTC.(rewrite.AgentCallIDs).AdoptAgentCallIDs(noIDs, 1, items)
		require.NoError(t, err)
		require.Equal(t, items, got)
		got, err = gemTC.(rewrite.AgentCallIDs).AdoptAgentCallIDs(body, 0, items)
		require.NoError(t, err, "a user content at pos holds no calls")
		require.Equal(t, items, got)
	})
	t.Run("position out of range", func(t *testing.T) {
		_, err := gemTC.(rewrite.AgentCallIDs).AdoptAgentCallIDs(body, 2, items)
		require.Error(t, err)
	})
}

// FuzzGeminiAdoptAgentCallIDs: any agent copy and replayed item give no
// panic, as many items as given, and valid JSON for a valid item.
func FuzzGeminiAdoptAgentCallIDs(f *testing.F) {
	f.Add(`{"role":"model","parts":[{"functionCall":{"id":"f_1_0","name":"f","args":{"a":1}}}]}`,
		`{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"S"}]}`)
	f.Add(`{"role":"model","parts":[{"function_call":{"id":"x","name":"f"}}]}`, `{"role":"model","parts":[{"function_call":{"name":"f"}}]}`)
	f.Add(`{"role":"model","parts":null}`, `{"role":"model","parts":[{"functionCall":{"name":"f","id":null}}]}`)
	f.Fuzz(func(t *testing.T, agent, item string) {
		body := []byte(`{"contents":[` + agent + `]}`)
		if !gjson.ValidBytes(body) {
			return
		}
		out, err := gemTC.(rewrite.AgentCallIDs).AdoptAgentCallIDs(body, 0, [][]byte{[]byte(item)})
		if err != nil {
			return
		}
		require.Len(t, out, 1)
		if gjson.Valid(item) {
			require.True(t, gjson.ValidBytes(out[0]), "%s", out[0])
		}
	})
}
