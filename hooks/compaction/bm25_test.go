package compaction

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTokenize(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"words lower-cased, stop words and single letters out", "Fix the Parser in a minute", []string{"fix", "parser", "minute"}},
		{"camelCase: words, then the identifier", "parseConfig", []string{"parse", "config", "parseconfig"}},
		{"PascalCase with an acronym", "HTTPServer", []string{"http", "server", "httpserver"}},
		{"snake_case", "read_file", []string{"read", "file", "readfile"}},
		{"kebab-case", "max-tokens", []string{"max", "tokens", "maxtokens"}},
		{"digits split from letters", "utf8Decode", []string{"utf", "decode", "utf8decode"}},
		{"paths split at slashes and dots", "hooks/compaction/config.go", []string{"hooks", "compaction", "config", "go"}},
		{"a leading dash is punctuation", "--verbose flag", []string{"verbose", "flag"}},
		{"a trailing separator", "name_ x", []string{"name"}},
		{"non-ASCII letters", "Größe überprüfen", []string{"größe", "überprüfen"}},
		{"empty", "", nil},
		{"punctuation only", "!!! ... ///", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tokenize(tc.in))
		})
	}
}

func TestScoreBM25(t *testing.T) {
	docs := []string{
		"package main\nfunc main() { fmt.Println(\"hello\") }",
		"func parseConfig(path string) (*Config, error) { return loadYAML(path) }",
		"README: how to install the tool",
	}
	t.Run("the document naming the query's identifier ranks first", func(t *testing.T) {
		s := scoreBM25("why does parseConfig fail on a missing path?", docs)
		require.Greater(t, s[1], s[0])
		require.Greater(t, s[1], s[2])
		require.Zero(t, s[0], "no query term")
	})
	t.Run("a split identifier matches its words", func(t *testing.T) {
		s := scoreBM25("the config parser", docs)
		require.Greater(t, s[1], 0.0)
	})
	t.Run("no query terms: every score is 0", func(t *testing.T) {
		require.Equal(t, []float64{0, 0, 0}, scoreBM25("the of a", docs))
		require.Equal(t, []float64{0, 0, 0}, scoreBM25("", docs))
	})
	t.Run("no documents", func(t *testing.T) {
		require.Empty(t, scoreBM25("config", nil))
	})
	t.Run("a rarer term weighs more", func(t *testing.T) {
		s := scoreBM25("alpha beta", []string{"alpha beta", "alpha gamma", "alpha delta"})
		require.Greater(t, s[0], s[1], "beta is in one document, alpha in all")
		require.Greater(t, s[1], 0.0, "a term in every document still counts a little")
		require.InDelta(t, s[1], s[2], 1e-12)
	})
	t.Run("the same count in a shorter document scores higher", func(t *testing.T) {
		s := scoreBM25("needle", []string{"needle hay", "needle hay hay hay hay hay hay hay", "straw"})
		require.Greater(t, s[0], s[1])
	})
	t.Run("more occurrences score higher, with diminishing returns", func(t *testing.T) {
		s := scoreBM25("needle", []string{"needle hay hay hay", "needle needle hay hay", "needle needle needle needle", "straw"})
		require.Greater(t, s[1], s[0])
		require.Greater(t, s[2], s[1])
		require.Less(t, s[2]-s[1], s[1]-s[0], "doubling 2 to 4 adds less than 1 to 2")
	})
}
