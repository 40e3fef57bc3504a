package compaction

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// BM25 parameters: the usual k1 and b (Robertson and Zaragoza, "The
// Probabilistic Relevance Framework: BM25 and Beyond").
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// scoreBM25 scores each document against query with Okapi BM25 over the
// documents given (the corpus is the documents themselves). The IDF is the
// non-negative form ln(1 + (N - n + 0.5) / (n + 0.5)), so a term every
// document holds still counts a little. A query without terms scores every
// document 0.
func scoreBM25(query string, docs []string) []float64 {
	scores := make([]float64, len(docs))
	terms := uniqueTerms(tokenize(query))
	if len(terms) == 0 || len(docs) == 0 {
		return scores
	}
	want := make(map[string]int, len(terms))
	for i, t := range terms {
		want[t] = i
	}
	// Term frequencies of the query's terms only, and document lengths.
	tfs := make([][]int, len(docs))
	lens := make([]int, len(docs))
	df := make([]int, len(terms))
	total := 0
	for d, doc := range docs {
		tf := make([]int, len(terms))
		n := 0
		eachToken(doc, func(tok string) {
			n++
			if i, ok := want[tok]; ok {
				tf[i]++
			}
		})
		for i, c := range tf {
			if c > 0 {
				df[i]++
			}
		}
		tfs[d], lens[d] = tf, n
		total += n
	}
	avg := float64(total) / float64(len(docs))
	if avg == 0 {
		return scores
	}
	n := float64(len(docs))
	for i := range terms {
		if df[i] == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(df[i])+0.5)/(float64(df[i])+0.5))
		for d := range docs {
			tf := float64(tfs[d][i])
			if tf == 0 {
				continue
			}
			norm := bm25K1 * (1 - bm25B + bm25B*float64(lens[d])/avg)
			scores[d] += idf * tf * (bm25K1 + 1) / (tf + norm)
		}
	}
	return scores
}

func uniqueTerms(toks []string) []string {
	seen := make(map[string]bool, len(toks))
	out := toks[:0]
	for _, t := range toks {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// tokenize returns the terms of s, in order (see eachToken).
func tokenize(s string) []string {
	var out []string
	eachToken(s, func(t string) { out = append(out, t) })
	return out
}

// eachToken calls fn with every term of s, lower-cased, in order. A term
// is a run of letters and digits; identifiers are also split into their
// words: snake_case and kebab-case at the separator, camelCase and
// PascalCase at the case change (HTTPServer: http, server), and letters
// from digits (utf8Decode: utf, decode). An identifier with several words
// gives its words and then the whole identifier, without separators
// (parseConfig: parse, config, parseconfig), so a query that names it
// whole matches it best. Paths split at / and . like any punctuation.
// Terms of one character and a short list of English stop words are left
// out.
func eachToken(s string, fn func(string)) {
	var word, whole strings.Builder
	parts := 0
	var prev rune
	emit := func() {
		if word.Len() > 0 {
			if w := word.String(); keepTerm(w) {
				fn(w)
			}
			word.Reset()
			parts++
		}
	}
	endIdent := func() {
		emit()
		if parts > 1 {
			if w := whole.String(); keepTerm(w) {
				fn(w)
			}
		}
		whole.Reset()
		parts = 0
		prev = 0
	}
	for i, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if prev != 0 && boundary(prev, r, s[i+utf8.RuneLen(r):]) {
				emit()
			}
			lr := unicode.ToLower(r)
			word.WriteRune(lr)
			whole.WriteRune(lr)
			prev = r
		case (r == '_' || r == '-') && prev != 0:
			emit() // inside an identifier: a word ends, the identifier goes on
			prev = r
		default:
			endIdent()
		}
	}
	endIdent()
}

// boundary reports whether a new word starts at r after prev inside an
// identifier; rest is what follows r.
func boundary(prev, r rune, rest string) bool {
	switch {
	case prev == '_' || prev == '-':
		return false // the separator already ended the word
	case unicode.IsDigit(prev) != unicode.IsDigit(r):
		return true
	case unicode.IsLower(prev) && unicode.IsUpper(r):
		return true
	case unicode.IsUpper(prev) && unicode.IsUpper(r):
		// HTTPServer: the S starts a word when a lower-case letter follows.
		next, _ := utf8.DecodeRuneInString(rest)
		return unicode.IsLower(next)
	}
	return false
}

// keepTerm reports whether a term is worth scoring.
func keepTerm(t string) bool {
	if utf8.RuneCountInString(t) < 2 {
		return false
	}
	_, stop := stopWords[t]
	return !stop
}

// stopWords are English words too common to tell results apart.
var stopWords = map[string]struct{}{
	"an": {}, "and": {}, "are": {}, "as": {}, "at": {}, "be": {}, "but": {}, "by": {}, "can": {},
	"do": {}, "does": {}, "for": {}, "from": {}, "has": {}, "have": {}, "how": {}, "if": {}, "in": {},
	"into": {}, "is": {}, "it": {}, "its": {}, "me": {}, "my": {}, "no": {}, "not": {}, "of": {},
	"on": {}, "or": {}, "our": {}, "please": {}, "so": {}, "that": {}, "the": {}, "their": {},
	"then": {}, "there": {}, "these": {}, "this": {}, "to": {}, "was": {}, "we": {}, "what": {},
	"when": {}, "where": {}, "which": {}, "why": {}, "will": {}, "with": {}, "you": {}, "your": {},
}
