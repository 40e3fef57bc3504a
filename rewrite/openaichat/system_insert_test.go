package openaichat

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// TestSystemInsertSameBytes: the system note goes in as an insertion into
// the messages (a leading system or developer message's string or array
// content, or a new system message first) with the bytes chatAppendSystem
// writes on the whole body; a null content falls back to it.
func TestSystemInsertSameBytes(t *testing.T) {
	pad := strings.Repeat("long rule \\n ", 1000) // past the index memo's minimum
	tail := `,{"role":"user","content":"` + pad + `"}],"tools":[]}`
	bodies := map[string]string{
		"string":    `{"model":"m","messages":[{"role":"system","content":"be brief"}` + tail,
		"empty":     `{"model":"m","messages":[{"role":"system","content":""}` + tail,
		"developer": `{"model":"m","messages":[{"content":[{"type":"text","text":"a"}] , "role":"developer"}` + tail,
		"parts":     `{"model":"m","messages":[{"role":"system","content":[ ]}` + tail,
		"none":      `{"model":"m","messages":[{"role":"user","content":"hi"}` + tail,
		"null":      `{"model":"m","messages":[{"role":"system","content":null}` + tail,
	}
	texts := []string{"chapter <1>", "note\nnext"}
	for name, body := range bodies {
		want, err := chatAppendSystem([]byte(body), texts)
		require.NoError(t, err, name)
		c := Descriptor.NewCodec(rewrite.NewViewCache(1 << 20))
		b := []byte(body)
		_, err = c.ParseRequest(b)
		require.NoError(t, err, name)
		got, err := c.ApplyEdits(b, conv.RequestEdits{AppendSystem: texts})
		require.NoError(t, err, name)
		require.Equal(t, string(want), string(got), name)

		i := strings.Index(body, `"messages":`) + len(`"messages":`)
		j := strings.LastIndex(body, `],"tools"`) + 1
		_, _, ok := chatInsertSystem([]byte(body[i:j]), texts)
		require.Equal(t, name != "null", ok, name)
	}
}
