package policy

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"

	"github.com/bmatcuk/doublestar/v4"
)

// DisallowsTool reports the first disallow_tools entry matching the tool
// name: an entry matches when it equals name or, as a glob (* ? [..] {..}),
// matches it. Matching is case-sensitive. It returns ("", false) when no
// entry matches.
func (in *Intent) DisallowsTool(name string) (entry string, ok bool) {
	return matchTool(in.DisallowTools, name)
}

// AsksTool reports the first ask_tools entry matching the tool name, with
// DisallowsTool's matching rules.
func (in *Intent) AsksTool(name string) (entry string, ok bool) {
	return matchTool(in.AskTools, name)
}

func matchTool(entries []string, name string) (string, bool) {
	for _, e := range entries {
		if e == name {
			return e, true
		}
		if m, err := doublestar.Match(e, name); err == nil && m {
			return e, true
		}
	}
	return "", false
}

// MatchPattern reports the first disallow_patterns entry (in file order)
// matching the call's arguments. A pattern matches when it matches the raw
// JSON text of args or any string value inside args (decoded, at any depth;
// object keys are not included). When args is not valid JSON only the raw
// text is matched. It returns ("", false) when no pattern matches.
func (in *Intent) MatchPattern(args []byte) (pattern string, ok bool) {
	return matchPatterns(in.DisallowPatterns, in.res, args)
}

// MatchAskPattern reports the first ask_patterns entry matching the call's
// arguments, with MatchPattern's matching rules.
func (in *Intent) MatchAskPattern(args []byte) (pattern string, ok bool) {
	return matchPatterns(in.AskPatterns, in.askRes, args)
}

func matchPatterns(srcs []string, res []*regexp.Regexp, args []byte) (string, bool) {
	if len(srcs) == 0 {
		return "", false
	}
	if len(res) != len(srcs) { // built by hand, not by Parse
		res = make([]*regexp.Regexp, len(srcs))
		for i, src := range srcs {
			res[i], _ = regexp.Compile(src) // nil (skipped) when invalid
		}
	}
	var strs []string
	decoded := false
	for i, re := range res {
		if re == nil {
			continue
		}
		if re.Match(args) {
			return srcs[i], true
		}
		if !decoded {
			decoded = true
			var v any
			if json.Unmarshal(args, &v) == nil {
				strs = stringValues(v, nil)
			}
		}
		for _, s := range strs {
			if re.MatchString(s) {
				return srcs[i], true
			}
		}
	}
	return "", false
}

// stringValues appends every string value inside v (not object keys).
func stringValues(v any, out []string) []string {
	switch t := v.(type) {
	case string:
		out = append(out, t)
	case []any:
		for _, e := range t {
			out = stringValues(e, out)
		}
	case map[string]any:
		for _, e := range t {
			out = stringValues(e, out)
		}
	}
	return out
}

// CheckPath checks a normalised workspace-relative path (as returned by
// NormalizePath) against the intent's scope. deny_glob wins over allow_glob
// and is matched case-insensitively (so a case-insensitive filesystem cannot
// be used to dodge it); allow_glob is matched case-sensitively; both use
// doublestar semantics ("**" crosses directories). An empty allow_glob puts
// nothing in scope. When ok is false, reason says why in a form fit for the
// model, e.g. `"secrets/key.pem" matches deny_glob "secrets/**"`. A path that
// is not normalised (empty, absolute or with ".." segments) is refused.
func (in *Intent) CheckPath(rel string) (ok bool, reason string) {
	v, reason := in.ScopePath(rel)
	if v == ScopeAsk { // CheckPath predates ask_glob: an asked path is in scope
		return true, ""
	}
	return v == ScopeAllow, reason
}

// ScopeVerdict is what an intent's scope says about a path.
type ScopeVerdict int

// Scope verdicts.
const (
	ScopeAllow ScopeVerdict = iota
	ScopeAsk
	ScopeRefuse
)

// ScopePath checks a path like CheckPath, with the ask rule: deny_glob
// refuses first; then a path matching ask_glob (case-insensitively, like
// deny_glob) is ScopeAsk, whether or not allow_glob covers it; then
// allow_glob allows; anything else is refused. reason says why for
// ScopeAsk and ScopeRefuse.
func (in *Intent) ScopePath(rel string) (ScopeVerdict, string) {
	if rel == "" || strings.HasPrefix(rel, "/") || hasDotDot(rel) {
		return ScopeRefuse, fmt.Sprintf("%q is not a workspace-relative path", rel)
	}
	folded := foldCase(rel)
	for _, g := range in.DenyGlob {
		if m, _ := doublestar.Match(foldCase(g), folded); m {
			return ScopeRefuse, fmt.Sprintf("%q matches deny_glob %q", rel, g)
		}
	}
	for _, g := range in.AskGlob {
		if m, _ := doublestar.Match(foldCase(g), folded); m {
			return ScopeAsk, fmt.Sprintf("%q matches ask_glob %q", rel, g)
		}
	}
	if len(in.AllowGlob) == 0 {
		return ScopeRefuse, fmt.Sprintf("%q is outside the scope of %s: it has no allow_glob", rel, in.ID)
	}
	for _, g := range in.AllowGlob {
		if m, _ := doublestar.Match(g, rel); m {
			return ScopeAllow, ""
		}
	}
	return ScopeRefuse, fmt.Sprintf("%q matches no allow_glob of %s (%s)", rel, in.ID, strings.Join(in.AllowGlob, ", "))
}

func hasDotDot(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return true
		}
	}
	return false
}

// foldCase maps every letter to a canonical lower-case form, so that two
// strings differing only in case (including special folds such as the
// Kelvin sign or long s) fold to the same string. Glob metacharacters are
// unaffected.
func foldCase(s string) string {
	return strings.Map(func(r rune) rune { return unicode.ToLower(unicode.ToUpper(r)) }, s)
}

// NormalizePath turns a path a tool call names into a slash-separated path
// relative to root (an absolute, clean directory path). Relative paths are
// taken relative to root. ".", "..", "./" prefixes, trailing slashes and
// repeated separators are resolved purely lexically: the filesystem is not
// consulted and symlinks are not followed. ok is false for an empty path, a
// path containing a NUL byte, or one that escapes root (e.g. "../x";
// "/etc/passwd" or "/work/application/x" when root is "/work/app"). A path
// equal to root gives ".".
func NormalizePath(root, p string) (rel string, ok bool) {
	if p == "" || strings.IndexByte(p, 0) >= 0 {
		return "", false
	}
	root = path.Clean(filepath.ToSlash(root))
	p = filepath.ToSlash(p)
	if !path.IsAbs(p) {
		p = root + "/" + p
	}
	p = path.Clean(p)
	switch {
	case p == root:
		return ".", true
	case root == "/":
		return p[1:], true
	case strings.HasPrefix(p, root) && p[len(root)] == '/':
		return p[len(root)+1:], true
	}
	return "", false
}
