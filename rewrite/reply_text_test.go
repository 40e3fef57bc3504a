package rewrite

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// TestTextParts: the text is the reply's own copy (the body may be reused
// after String), several parts are joined in order, anything but a string
// adds nothing, and escapes are decoded, whether the parts were read with
// their strings decoded or not.
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
	var many TextParts
	for _, p := range parts {
		many.Add(p)
	}
	joined := many.String()
	copy(body[10:], "XXXXX") // the body is reused
	require.Equal(t, "plain", got)
	require.Equal(t, "plaina\nb éend", joined)

	// Parts read without their strings decoded (MembersRaw) give the same.
	var raw TextParts
	jsonkit.EachElement(gjson.Parse(jsonkit.UnsafeString(body)), func(_ int, v gjson.Result) bool {
		var kv [1]gjson.Result
		jsonkit.MembersRaw(v, []string{"text"}, kv[:])
		raw.Add(kv[0])
		return true
	})
	require.Equal(t, "XXXXXa\nb éend", raw.String())
	var none TextParts
	none.Add(parts[2])
	require.Equal(t, "", none.String())
}
