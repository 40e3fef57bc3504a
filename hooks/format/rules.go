package format

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/shepherd-proxy/shepherd/ruleline"
)

// Rule is one format rule (key format.rules): the prompts it matches and
// the instruction it appends.
//
// Syntax: "<name> match=<regexp> [words=<n>] [bullets=<n>]
// [order=importance] | [text=<instruction>]", key=value pairs in any
// order; a value with blanks is a Go quoted string ("…" with escapes, or
// `…` raw, handy for a regular expression). match (Go RE2 syntax) is
// required; give words, bullets and order (the instruction is rendered
// from them) or text (the instruction itself), not both.
type Rule struct {
	Name  string
	Match *regexp.Regexp
	// Words and Bullets bound the answer (0: no bound); Importance asks
	// for the most important first; Text, when set, is the instruction
	// instead.
	Words, Bullets int
	Importance     bool
	Text           string
	// instruction is what the rule appends, rendered once (byte-identical
	// on every request).
	instruction string
}

// ruleKeys are the keys a rule may have.
var ruleKeys = "match, words, bullets, order, text"

// ParseRule parses one format.rules line.
func ParseRule(line string) (Rule, error) {
	name, kv, order, err := ruleline.Fields(line)
	if err != nil {
		return Rule{}, err
	}
	r := Rule{Name: name}
	if !ruleline.ValidName(name) {
		return r, fmt.Errorf("rule name %q: use letters, digits, - _ . (at most 64)", name)
	}
	fail := func(format string, args ...any) (Rule, error) {
		return r, fmt.Errorf("rule %s: "+format, append([]any{name}, args...)...)
	}
	for _, k := range order {
		v := kv[k]
		switch k {
		case "match":
			if v == "" {
				return fail("match is empty")
			}
			if r.Match, err = regexp.Compile(v); err != nil {
				return fail("match: %v", err)
			}
		case "words", "bullets":
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return fail("%s %q is not a positive integer", k, v)
			}
			if k == "words" {
				r.Words = n
			} else {
				r.Bullets = n
			}
		case "order":
			if v != "importance" {
				return fail("order %q is not importance", v)
			}
			r.Importance = true
		case "text":
			if strings.TrimSpace(v) == "" {
				return fail("text is empty")
			}
			r.Text = v
		default:
			return fail("unknown key %q (keys: %s)", k, ruleKeys)
		}
	}
	rendered := r.Words > 0 || r.Bullets > 0 || r.Importance
	switch {
	case r.Match == nil:
		return fail("needs match=<regexp>")
	case r.Text != "" && rendered:
		return fail("text replaces words, bullets and order: give one or the other")
	case r.Text == "" && !rendered:
		return fail("does nothing: give words, bullets, order or text")
	}
	r.instruction = r.Text
	if r.instruction == "" {
		r.instruction = render(r.Words, r.Bullets, r.Importance)
	}
	return r, nil
}

// render writes the instruction of a rule's bounds: "Format: at most 120
// words; at most 5 bullets; most important first."
func render(words, bullets int, importance bool) string {
	var parts []string
	if words > 0 {
		parts = append(parts, "at most "+count(words, "word"))
	}
	if bullets > 0 {
		parts = append(parts, "at most "+count(bullets, "bullet"))
	}
	if importance {
		parts = append(parts, "most important first")
	}
	return "Format: " + strings.Join(parts, "; ") + "."
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// Instruction is the text the rule appends.
func (r *Rule) Instruction() string { return r.instruction }

// ParseRules parses format.rules in order: every line's problem, and a
// name used twice (rule names label the metric and the feed event).
func ParseRules(lines []string) ([]Rule, []error) {
	rules := make([]Rule, 0, len(lines))
	var errs []error
	seen := map[string]bool{}
	for _, l := range lines {
		r, err := ParseRule(l)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[r.Name] {
			errs = append(errs, fmt.Errorf("rule %s: the name is used twice", r.Name))
			continue
		}
		seen[r.Name] = true
		rules = append(rules, r)
	}
	return rules, errs
}

// First returns the first rule one of texts matches (each text on its
// own), and whether one did.
func First(rules []Rule, texts []string) (*Rule, bool) {
	for i := range rules {
		for _, t := range texts {
			if rules[i].Match.MatchString(t) {
				return &rules[i], true
			}
		}
	}
	return nil, false
}
