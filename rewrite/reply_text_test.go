package rewrite

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// TestTextParts: one part is the reply's own copy (the body may be
// reused), several are joined in order, anything but a string adds
// nothing, and escapes are decoded.
func TestTextParts(t *testing.T) {
	body := []byte(`[{"text":"plain"},{"text":"a\nb \u00e9"},{"text":7},{"text":"end"}]`)
	var parts []gjson.Result
	jsonkit.EachElement(gjson.Parse(jsonkit.UnsafeString(body)), func(_ int, v gjson.Result) bool {
		parts = append(parts, jsonkit.Member(v, "text"))
		return true
	})
	var one TextParts
	one.Add(parts[0])
	got := one.String()
	copy(body[10:], "XXXXX") // the body is reused
	require.Equal(t, "plain", got)

	var many TextParts
	for _, p := range parts {
		many.Add(p)
	}
	require.Equal(t, "XXXXXa\nb éend", many.String())
	var none TextParts
	none.Add(parts[2])
	require.Equal(t, "", none.String())
}
