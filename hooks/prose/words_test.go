package prose

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestCountWords(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       int
	}{
		{"empty", "", 0},
		{"blank", " \t\n\u00a0\u3000", 0},
		{"ascii", "Let me read the file first.", 6},
		{"punctuation alone is no word", "— * - ... ``` ### >", 0},
		{"contraction and path are one word each", "don't touch src/main.go", 3},
		{"numbers count", "step 1 of 3", 4},
		{"markdown list", "- read the file\n- fix it\n1. done", 7},
		{"cyrillic", "Привет, мир", 2},
		{"greek and accents", "καλημέρα κόσμε, café naïve", 4},
		{"arabic", "مرحبا بالعالم", 2},
		{"chinese: one word per character", "我用Go写代码", 6},
		{"japanese kana and kanji", "ファイルを読みます", 9},
		{"korean words are spaced", "파일을 읽겠습니다", 2},
		{"ideographic space separates", "hello\u3000world", 2},
		{"emoji is no word", "done 🎉", 1},
		{"digits inside a token", "v1.2.3", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, CountWords(tc.text))
		})
	}
}

// TestCountWordsThreshold: the default threshold (25) against a typical
// tool-loop preamble and a paragraph.
func TestCountWordsThreshold(t *testing.T) {
	require.LessOrEqual(t, CountWords("Let me look at the failing test first."), 25)
	require.Greater(t, CountWords(strings.Repeat("The test fails because the fixture is stale. ", 4)), 25)
}

// FuzzCountWords: the count never exceeds the runes of the text, is 0 for
// white space alone, and is additive over texts joined by a space.
func FuzzCountWords(f *testing.F) {
	for _, s := range []string{"", "a b", "我用Go写代码", "don't", "— *", "\u3000x\u00a0y", "\xff\xfe"} {
		f.Add(s, "tail words")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		n := CountWords(a)
		if n < 0 || n > utf8.RuneCountInString(a) {
			t.Fatalf("CountWords(%q) = %d", a, n)
		}
		if strings.TrimSpace(a) == "" && n != 0 {
			t.Fatalf("CountWords(%q) = %d for white space", a, n)
		}
		if got := CountWords(a + " " + b); got != n+CountWords(b) {
			t.Fatalf("CountWords(%q + %q) = %d, want %d", a, b, got, n+CountWords(b))
		}
	})
}
