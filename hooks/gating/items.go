package gating

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// minRareWord is the length (in letters) from which a word that is not
// common counts as an item.
const minRareWord = 6

// sharesItem reports whether msg names an item that prev (the previous
// exchange) names too: a number, an identifier (main.go, user_id,
// getUser), a quoted string, a capitalised name (not a sentence's first
// word) or a rare word (long and not a common one). Matching is
// case-insensitive.
func sharesItem(msg, prev string) bool {
	if strings.TrimSpace(prev) == "" {
		return false
	}
	lowPrev := strings.ToLower(prev)
	for _, q := range quoted(msg) {
		if q = strings.ToLower(strings.TrimSpace(q)); utf8.RuneCountInString(q) >= 2 && strings.Contains(lowPrev, q) {
			return true
		}
	}
	known := tokenSet(prev)
	sentenceStart := true
	for _, raw := range strings.Fields(msg) {
		tok := trimToken(raw)
		first := sentenceStart
		sentenceStart = strings.ContainsAny(raw[len(raw)-1:], ".!?")
		if tok == "" || !isItem(tok, first) {
			continue
		}
		if known[strings.ToLower(tok)] {
			return true
		}
	}
	return false
}

// isItem reports whether a token of a message is an item: first says it
// opens a sentence (so its capital says nothing).
func isItem(tok string, first bool) bool {
	letters, digits, upperInside := 0, 0, false
	for i, r := range tok {
		switch {
		case unicode.IsDigit(r):
			digits++
		case unicode.IsLetter(r):
			letters++
			if i > 0 && unicode.IsUpper(r) {
				upperInside = true
			}
		}
	}
	r0, _ := utf8.DecodeRuneInString(tok)
	switch {
	case digits > 0:
		return true // a number, a version, an id
	case strings.ContainsAny(tok, "_./:#@") && letters > 0:
		return true // an identifier, a file, a path
	case upperInside && letters > 1:
		return true // camelCase, an acronym
	case unicode.IsUpper(r0) && !first && letters > 1:
		return true // a name
	}
	low := strings.ToLower(tok)
	return letters == utf8.RuneCountInString(tok) && letters >= minRareWord && !common[low]
}

// tokenSet is the lower-cased tokens of text, whole (main.go) and split
// into words (main, go).
func tokenSet(text string) map[string]bool {
	set := map[string]bool{}
	for _, raw := range strings.Fields(text) {
		if tok := trimToken(raw); tok != "" {
			set[strings.ToLower(tok)] = true
		}
	}
	for _, w := range words(text) {
		set[w] = true
	}
	return set
}

// trimToken strips the punctuation around a whitespace-separated token.
func trimToken(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '#' && r != '@'
	})
}

// quoted returns the strings quoted in text: between double quotes, curly
// quotes or backticks.
func quoted(text string) []string {
	var out []string
	for _, q := range [][2]string{{`"`, `"`}, {"“", "”"}, {"`", "`"}} {
		rest := text
		for {
			i := strings.Index(rest, q[0])
			if i < 0 {
				break
			}
			rest = rest[i+len(q[0]):]
			j := strings.Index(rest, q[1])
			if j < 0 {
				break
			}
			out = append(out, rest[:j])
			rest = rest[j+len(q[1]):]
		}
	}
	return out
}

// common are frequent words long enough to pass as rare.
var common = set(
	"should", "would", "could", "because", "before", "people", "really", "things", "something", "anything",
	"everything", "nothing", "another", "different", "question", "questions", "answer", "answers", "please",
	"thanks", "example", "examples", "between", "through", "without", "within", "during", "around", "actually",
	"always", "usually", "better", "little", "number", "change", "changes", "friend", "friends", "problem",
	"problems", "simple", "explain", "understand", "important", "possible", "create", "provide", "information",
	"someone", "everyone", "anyone", "system", "minutes", "seconds", "difference", "whether", "though",
	"although", "however", "instead", "rather", "pretty", "enough", "almost", "already", "toward", "towards",
	"myself", "yourself", "itself", "himself", "herself", "themselves", "ourselves", "thinking", "looking",
	"making", "having", "getting", "going", "trying", "wanted", "needed", "others", "further", "second",
	"latest", "recent", "recently", "tomorrow", "yesterday", "morning", "evening", "across", "against",
	"behind", "beyond", "inside", "outside", "become", "becomes", "called", "certain", "certainly", "specific",
	"general", "basically", "quickly", "easily", "similar", "common", "probably", "definitely", "exactly",
	"written", "writing", "return", "returns", "working", "anybody", "somebody", "everybody", "nobody",
	"wonder", "wondering", "awesome", "helpful", "useful", "interesting", "course", "little", "several",
	"perhaps", "special", "better", "things", "thanks", "matter", "points", "option", "options", "typically",
	"generally", "usually", "depends", "depending", "includes", "including", "following", "approach",
	"method", "methods", "result", "results", "reason", "reasons", "details", "detail", "simply", "either",
	"neither", "rather", "person", "places", "around", "points", "quality", "amount", "longer", "shorter",
)
