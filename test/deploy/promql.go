// Package deploy checks the deployment files under deploy/ against the
// code: the Grafana dashboard's queries name only metrics a running
// shepherd exposes, the image runs as non-root with a healthcheck, and the
// Compose, Prometheus and Grafana files agree with one another.
package deploy

import (
	"sort"
	"strings"
)

// promqlKeywords are PromQL words that are not metric names: binary and
// set operators, grouping modifiers and the literals.
var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true,
	"by": true, "without": true, "on": true, "ignoring": true,
	"group_left": true, "group_right": true, "inf": true, "nan": true,
	// aggregation operators, which may be followed by a grouping clause
	// rather than their parenthesis: `sum by (le) (...)`.
	"sum": true, "avg": true, "min": true, "max": true, "count": true,
	"group": true, "stddev": true, "stdvar": true, "topk": true,
	"bottomk": true, "quantile": true, "count_values": true,
	"limitk": true, "limit_ratio": true,
}

// groupingWords take a parenthesised list of label names.
var groupingWords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true,
	"group_left": true, "group_right": true,
}

// MetricNames returns the metric names a PromQL expression selects,
// sorted and without duplicates. It reads the expression the way PromQL's
// lexer does, as far as names go: string literals, label matchers
// ({...}), range and subquery brackets ([...]), label lists of grouping
// clauses, function names (an identifier followed by "(") and keywords
// are skipped; every other identifier is a metric name. It does not check
// the expression's syntax.
func MetricNames(expr string) []string {
	seen := map[string]bool{}
	i := 0
	skipGroupList := false
	for i < len(expr) {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(expr, i)
		case c == '{':
			i = skipTo(expr, i, '}')
		case c == '[':
			i = skipTo(expr, i, ']')
		case c == '(' && skipGroupList:
			i = skipTo(expr, i, ')')
			skipGroupList = false
		case c == '#': // comment to the end of the line
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdentChar(expr[j]) {
				j++
			}
			word := expr[i:j]
			i = j
			switch {
			case groupingWords[strings.ToLower(word)]:
				skipGroupList = true
			case promqlKeywords[strings.ToLower(word)]:
			case nextNonSpace(expr, j) == '(':
				// a function call
			default:
				seen[word] = true
			}
		case c >= '0' && c <= '9' || c == '.':
			// a number (1e-3, 0x1f, 5m): digits and the letters after them
			for i < len(expr) && (isIdentChar(expr[i]) || expr[i] == '.' ||
				((expr[i] == '-' || expr[i] == '+') && i > 0 && (expr[i-1] == 'e' || expr[i-1] == 'E'))) {
				i++
			}
		default:
			i++
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

// skipString returns the index after the string literal starting at i
// (backslash escapes in double- and single-quoted strings; none in
// backquoted ones).
func skipString(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && q != '`':
			j++
		case s[j] == q:
			return j + 1
		}
	}
	return len(s)
}

// skipTo returns the index after the first close at or after i that is
// outside a string literal.
func skipTo(s string, i int, close byte) int {
	for j := i + 1; j < len(s); {
		switch s[j] {
		case '"', '\'', '`':
			j = skipString(s, j)
		case close:
			return j + 1
		default:
			j++
		}
	}
	return len(s)
}

// nextNonSpace is the first byte at or after i that is not white space, 0
// at the end.
func nextNonSpace(s string, i int) byte {
	for ; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
			return s[i]
		}
	}
	return 0
}
