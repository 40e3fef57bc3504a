package compaction

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestCutHeadTail(t *testing.T) {
	digits := strings.Repeat("0123456789", 10) // 100 characters
	for _, tc := range []struct {
		name       string
		in         string
		keep       int
		head, tail string
	}{
		{"shorter than keep: whole, as head", "abc", 10, "abc", ""},
		{"exactly keep: whole", "abcdefghij", 10, "abcdefghij", ""},
		{"keep 0: nothing", "abc", 0, "", ""},
		{"negative keep: nothing", "abc", -1, "", ""},
		{"60% head, 40% tail", digits, 10, "012345", "6789"},
		{"multi-byte runes count as one character each", strings.Repeat("é", 20), 10, strings.Repeat("é", 6), strings.Repeat("é", 4)},
		{"4-byte runes are never split", strings.Repeat("😀", 20), 5, "😀😀😀", "😀😀"},
		{"an invalid byte counts as one character", "\xff\xfe" + strings.Repeat("x", 20), 5, "\xff\xfex", "xx"},
		{
			"the head ends at a line break near its end",
			strings.Repeat("a", 55) + "\n" + strings.Repeat("b", 44) + "\n" + strings.Repeat("c", 99), 100,
			strings.Repeat("a", 55) + "\n", strings.Repeat("c", 40),
		},
		{
			"the tail starts after a line break near its start",
			strings.Repeat("a", 150) + "\n" + strings.Repeat("z", 38), 100,
			strings.Repeat("a", 60), strings.Repeat("z", 38),
		},
		{
			"a break far from the cut is not taken",
			"a\n" + strings.Repeat("b", 198) + "\n" + strings.Repeat("c", 2), 100,
			"a\n" + strings.Repeat("b", 58), strings.Repeat("b", 37) + "\ncc",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, tl := cutHeadTail(tc.in, tc.keep)
			require.Equal(t, tc.head, h)
			require.Equal(t, tc.tail, tl)
		})
	}
}

func TestCompact(t *testing.T) {
	note := "[kept {kept} of {total}, {omitted} omitted; call {tool}]"
	t.Run("cut: head, note, tail", func(t *testing.T) {
		c := compact(strings.Repeat("x", 12345), 1500, note, "Read")
		require.Equal(t, compacted{text: c.text, kept: 1500, total: 12345, omitted: 10845}, c)
		require.Equal(t, strings.Repeat("x", 900)+"\n[kept 1,500 of 12,345, 10,845 omitted; call Read]\n"+strings.Repeat("x", 600), c.text)
	})
	t.Run("a head ending in a line break gets no second one", func(t *testing.T) {
		c := compact(strings.Repeat("ab\n", 100), 30, note, "Read")
		require.True(t, strings.HasPrefix(c.text, "ab\nab\n"))
		require.NotContains(t, c.text, "\n\n[kept")
		require.Contains(t, c.text, "\n[kept 30 of 300, 270 omitted; call Read]\n")
	})
	t.Run("stub: the note alone", func(t *testing.T) {
		c := compact("some long result", 0, note, "Grep")
		require.Equal(t, compacted{text: "[kept 0 of 16, 16 omitted; call Grep]", kept: 0, total: 16, omitted: 16}, c)
	})
	t.Run("unknown tool", func(t *testing.T) {
		require.Equal(t, "[kept 0 of 1, 1 omitted; call the tool]", compact("x", 0, note, "").text)
	})
	t.Run("the default note says what was kept and how to get it back", func(t *testing.T) {
		c := compact(strings.Repeat("y", 5000), 1000, DefaultNote, "Bash")
		require.Contains(t, c.text, "[shepherd compacted this tool result: kept 1,000 of 5,000 characters (its start and end), 4,000 omitted. Call Bash again to see it in full.]")
	})
}

func TestThousands(t *testing.T) {
	for in, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 12345: "12,345", 1234567: "1,234,567", -1500: "-1,500"} {
		require.Equal(t, want, thousands(in), "%d", in)
	}
}

// FuzzCutHeadTail: whatever the input and limit, the head is a prefix and
// the tail a suffix of the input, cut at rune boundaries, not overlapping,
// keeping at most keep characters (the whole input when it fits).
func FuzzCutHeadTail(f *testing.F) {
	f.Add("hello, world", 5)
	f.Add(strings.Repeat("é😀\n", 50), 17)
	f.Add("\xff\xfe\xfd abc", 2)
	f.Add("", 3)
	f.Fuzz(func(t *testing.T, s string, keep int) {
		keep %= 1 << 16
		h, tl := cutHeadTail(s, keep)
		n := utf8.RuneCountInString(s)
		if keep <= 0 {
			if h != "" || tl != "" {
				t.Fatalf("keep %d kept something", keep)
			}
			return
		}
		if n <= keep {
			if h != s || tl != "" {
				t.Fatalf("an input that fits must come back whole")
			}
			return
		}
		if !strings.HasPrefix(s, h) || !strings.HasSuffix(s, tl) {
			t.Fatalf("head is not a prefix or tail not a suffix")
		}
		if len(h)+len(tl) > len(s) {
			t.Fatalf("head and tail overlap")
		}
		if got := utf8.RuneCountInString(h) + utf8.RuneCountInString(tl); got > keep {
			t.Fatalf("kept %d characters, more than %d", got, keep)
		}
		if !boundaryAt(s, len(h)) || !boundaryAt(s, len(s)-len(tl)) {
			t.Fatalf("a cut splits a rune")
		}
	})
}

// boundaryAt reports whether byte offset i of s is where a rune starts (or
// the end), as ranging over s sees runes.
func boundaryAt(s string, i int) bool {
	if i == len(s) {
		return true
	}
	for off := range s {
		if off == i {
			return true
		}
	}
	return false
}
