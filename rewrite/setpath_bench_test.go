package rewrite

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/sjson"

	"github.com/shepherd-proxy/shepherd/bench/workload"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// handSetTopLevelInt is the hand-written top-level set setTopLevelInt
// used before it moved to sjson, kept to compare the two.
func handSetTopLevelInt(body []byte, key string, n int64) ([]byte, error) {
	root, ok := jsonkit.RootObject(jsonkit.UnsafeString(body))
	if !ok {
		return nil, errNotObject
	}
	return jsonkit.SetMember(body, root, key, strconv.AppendInt(nil, n, 10)), nil
}

// BenchmarkSetTopLevel compares the hand-written top-level set with sjson
// (what setMaxKey, setTopLevelInt and agSetTopMember use) on an agent-sized
// request. sjson was as fast or faster, so top-level sets use it; nested
// sets keep jsonkit.SetMember, which edits at an offset already found.
func BenchmarkSetTopLevel(b *testing.B) {
	body := workload.AnthropicAgent(30, false)
	want, err := handSetTopLevelInt(body, "max_tokens", 1234)
	require.NoError(b, err)
	got, err := sjson.SetBytes(body, "max_tokens", 1234)
	require.NoError(b, err)
	require.JSONEq(b, string(want), string(got))
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_, _ = handSetTopLevelInt(body, "max_tokens", 1234)
		}
	})
	b.Run("sjson", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_, _ = sjson.SetBytes(body, "max_tokens", 1234)
		}
	})
	b.Run("hand_new_key", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_, _ = handSetTopLevelInt(body, "max_output_tokens", 1234)
		}
	})
	b.Run("sjson_new_key", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_, _ = sjson.SetBytes(body, "max_output_tokens", 1234)
		}
	})
}
