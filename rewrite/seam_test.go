package rewrite

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTrimSeam(t *testing.T) {
	cases := []struct{ prev, next, want string }{
		{"The quick brown fox jumps over", " the lazy dog.", " the lazy dog."},
		{"The quick brown fox jumps over", "fox jumps over the lazy dog.", " the lazy dog."},
		{"The quick brown fox jumps over ", "  the lazy dog.", "the lazy dog."},
		{"ends with newline\n", "\n\nNext paragraph", "Next paragraph"},
		{"short the", "the end", "the end"}, // under 8 bytes: a coincidence
		{"", "anything", "anything"},
		{"abc", "", ""},
		{"käse und brot und", "brot und butter", " butter"},
		{"no overlap here at all", "completely different", "completely different"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, TrimSeam(c.prev, c.next), "%q + %q", c.prev, c.next)
	}
	long := strings.Repeat("x", 1000)
	require.Equal(t, "y", TrimSeam(long, strings.Repeat("x", 300)+"y")[300-SeamWindow:], "only the window is searched")
}

func TestSeamFilterMatchesTrimSeam(t *testing.T) {
	prev := "Step 3: run the migrations, then restart the"
	next := "then restart the server and check the logs for errors. " + strings.Repeat("More text. ", 40)
	for _, chunk := range []int{1, 3, 7, 64, 1000} {
		f := NewSeamFilter(prev)
		var out strings.Builder
		for i := 0; i < len(next); i += chunk {
			out.WriteString(f.Write(next[i:min(i+chunk, len(next))]))
		}
		out.WriteString(f.Flush())
		require.Equal(t, TrimSeam(prev, next), out.String(), "chunk %d", chunk)
	}
	f := NewSeamFilter(prev)
	require.Equal(t, "", f.Write(" restart the"))
	require.Equal(t, "", f.Flush(), "a continuation that only repeats leaves nothing")
}

func FuzzTrimSeam(f *testing.F) {
	f.Add("hello world, this is", "this is the end", 3)
	f.Add("a ", " b", 1)
	f.Fuzz(func(t *testing.T, prev, next string, chunk int) {
		got := TrimSeam(prev, next)
		require.True(t, strings.HasSuffix(next, got), "the result is a suffix of next")
		if chunk <= 0 || chunk > 64 {
			chunk = 1 + (chunk%64+64)%64
		}
		fl := NewSeamFilter(prev)
		var out strings.Builder
		for i := 0; i < len(next); i += chunk {
			out.WriteString(fl.Write(next[i:min(i+chunk, len(next))]))
		}
		out.WriteString(fl.Flush())
		require.Equal(t, TrimSeam(prev[max(0, len(prev)-SeamWindow):], next), out.String())
	})
}
