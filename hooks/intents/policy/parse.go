package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong with a policy file. Path locates it in the
// document, e.g. "intents[1].scope.allow_glob[0]" ("" for the document as a
// whole); Line is 1-based, 0 when unknown.
type Problem struct {
	Line int
	Path string
	Msg  string
}

// String renders the problem as "<line>: <path>: <msg>", leaving out the
// parts that are unknown.
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		b.WriteString(strconv.Itoa(p.Line))
		b.WriteString(": ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// ParseError is the error Parse returns: every problem found in File, in
// line order.
type ParseError struct {
	File     string
	Problems []Problem
}

// Error renders one entry per problem, "<file>:<line>: <path>: <msg>", joined
// with "; ". The ":<line>" part is left out when the line is unknown (0) and
// the "<path>: " part when the problem concerns the whole document.
func (e *ParseError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		var b strings.Builder
		b.WriteString(e.File)
		if p.Line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(p.Line))
		}
		b.WriteString(": ")
		if p.Path != "" {
			b.WriteString(p.Path)
			b.WriteString(": ")
		}
		b.WriteString(p.Msg)
		parts[i] = b.String()
	}
	if len(parts) == 0 {
		return e.File + ": invalid policy"
	}
	return strings.Join(parts, "; ")
}

// Parse parses and validates a policy file's bytes. file is used only in
// error messages and recorded in Policy.File. On success the error is nil and
// the policy non-nil; otherwise the policy is nil and the error is a
// *ParseError listing every problem found (YAML syntax errors included, with
// the line the YAML parser reports). Parse never panics.
func Parse(data []byte, file string) (*Policy, error) {
	ps := &parser{}
	root := ps.decode(data)
	var pol *Policy
	if root != nil {
		pol = ps.document(root)
	}
	if len(ps.probs) > 0 {
		sort.SliceStable(ps.probs, func(i, j int) bool { return ps.probs[i].Line < ps.probs[j].Line })
		return nil, &ParseError{File: file, Problems: ps.probs}
	}
	sum := sha256.Sum256(data)
	pol.File = file
	pol.Hash = hex.EncodeToString(sum[:])
	pol.LoadedAt = time.Now()
	return pol, nil
}

type parser struct {
	probs []Problem
}

func (ps *parser) add(line int, path, format string, args ...any) {
	ps.probs = append(ps.probs, Problem{Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// decode parses the YAML text and returns the top-level mapping node, or nil
// after recording a problem.
func (ps *parser) decode(data []byte) (root *yaml.Node) {
	defer func() {
		if r := recover(); r != nil {
			ps.add(0, "", "invalid YAML: %v", r)
			root = nil
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			ps.add(0, "", "empty policy file")
			return nil
		}
		ps.yamlError(err)
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		ps.add(extra.Line, "", "more than one YAML document")
	case !errors.Is(err, io.EOF):
		ps.yamlError(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		ps.add(doc.Line, "", "empty policy file")
		return nil
	}
	n := doc.Content[0]
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		ps.add(n.Line, "", "empty policy file")
		return nil
	}
	if n.Kind != yaml.MappingNode {
		ps.add(n.Line, "", "the top level must be a mapping, got %s", describe(n))
		return nil
	}
	return n
}

func (ps *parser) yamlError(err error) {
	msg := err.Error()
	line := 0
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	ps.add(line, "", "YAML syntax error: %s", msg)
}

// describe names a node's type for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "a string"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "null"
		default:
			return "a " + strings.TrimPrefix(n.ShortTag(), "!!")
		}
	}
	return "an unknown node"
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// fields checks that n is a mapping whose keys are all in allowed and unique,
// and returns the value nodes by key. It returns nil, after recording a
// problem, when n is not a mapping.
func (ps *parser) fields(n *yaml.Node, path string, allowed ...string) map[string]*yaml.Node {
	if n.Kind == yaml.AliasNode {
		ps.add(n.Line, path, "YAML aliases are not supported")
		return nil
	}
	if n.Kind != yaml.MappingNode {
		ps.add(n.Line, path, "must be a mapping, got %s", describe(n))
		return nil
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	keyLine := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			ps.add(k.Line, path, "keys must be strings, got %s", describe(k))
			continue
		}
		known := false
		for _, a := range allowed {
			if k.Value == a {
				known = true
				break
			}
		}
		if !known {
			ps.add(k.Line, join(path, k.Value), "unknown key (want one of %s)", strings.Join(allowed, ", "))
			continue
		}
		if first, dup := keyLine[k.Value]; dup {
			ps.add(k.Line, join(path, k.Value), "duplicate key (first at line %d)", first)
			continue
		}
		keyLine[k.Value] = k.Line
		out[k.Value] = v
	}
	return out
}

// str returns the string value of n. A null or absent value is "" and, when
// required, a problem ("required" is reported at line, the parent's line, when
// the key is absent).
func (ps *parser) str(n *yaml.Node, path string, required bool, line int) (string, bool) {
	if isNull(n) {
		if required {
			if n != nil {
				line = n.Line
			}
			ps.add(line, path, "required")
		}
		return "", !required
	}
	if n.Kind == yaml.AliasNode {
		ps.add(n.Line, path, "YAML aliases are not supported")
		return "", false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		ps.add(n.Line, path, "must be a string, got %s", describe(n))
		return "", false
	}
	if required && strings.TrimSpace(n.Value) == "" {
		ps.add(n.Line, path, "must not be empty")
		return "", false
	}
	return n.Value, true
}

// item is one string element of a list, with where it came from.
type item struct {
	val  string
	line int
	path string
}

// strList returns the string elements of the list n (null or absent: none).
func (ps *parser) strList(n *yaml.Node, path string) []item {
	elems := ps.list(n, path, "a list of strings")
	out := make([]item, 0, len(elems))
	for i, e := range elems {
		p := index(path, i)
		if e.Kind == yaml.AliasNode {
			ps.add(e.Line, p, "YAML aliases are not supported")
			continue
		}
		if e.Kind != yaml.ScalarNode || e.ShortTag() != "!!str" {
			ps.add(e.Line, p, "must be a string, got %s", describe(e))
			continue
		}
		out = append(out, item{val: e.Value, line: e.Line, path: p})
	}
	return out
}

// seq returns the elements of the list n (null or absent: none).
func (ps *parser) seq(n *yaml.Node, path string) []*yaml.Node { return ps.list(n, path, "a list") }

// list returns the elements of the sequence n (null or absent: none),
// reporting anything else as not being what.
func (ps *parser) list(n *yaml.Node, path, what string) []*yaml.Node {
	if isNull(n) {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		ps.add(n.Line, path, "YAML aliases are not supported")
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		ps.add(n.Line, path, "must be %s, got %s", what, describe(n))
		return nil
	}
	return n.Content
}

func (ps *parser) document(root *yaml.Node) *Policy {
	f := ps.fields(root, "", "version", "current_intent_id", "intents")
	if f == nil {
		return nil
	}
	pol := &Policy{index: map[string]int{}}

	switch v := f["version"]; {
	case isNull(v):
		ps.add(root.Line, "version", "required (version: 1)")
	case v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int":
		ps.add(v.Line, "version", "must be an integer, got %s", describe(v))
	default:
		var n int
		if err := v.Decode(&n); err != nil || n != 1 {
			ps.add(v.Line, "version", "unsupported version %s (want 1)", v.Value)
		} else {
			pol.Version = n
		}
	}

	cur, curOK := ps.str(f["current_intent_id"], "current_intent_id", false, root.Line)

	seen := map[string]int{} // every id string seen -> line of first occurrence
	for i, n := range ps.seq(f["intents"], "intents") {
		in, ok := ps.intent(n, index("intents", i), seen)
		if ok {
			pol.index[in.ID] = len(pol.Intents)
			pol.Intents = append(pol.Intents, in)
		}
	}

	if curOK && cur != "" {
		if _, ok := seen[cur]; !ok {
			ps.add(f["current_intent_id"].Line, "current_intent_id", "%q names no intent", cur)
		}
		pol.CurrentIntentID = cur
	}
	return pol
}

func (ps *parser) intent(n *yaml.Node, path string, seen map[string]int) (Intent, bool) {
	before := len(ps.probs)
	var in Intent
	f := ps.fields(n, path, "id", "summary", "scope", "constraints", "acceptance_criteria")
	if f == nil {
		return in, false
	}
	if id, ok := ps.str(f["id"], join(path, "id"), true, n.Line); ok {
		line := f["id"].Line
		if first, dup := seen[id]; dup {
			ps.add(line, join(path, "id"), "duplicate id %q (first at line %d)", id, first)
		} else {
			seen[id] = line
		}
		if !IDPattern.MatchString(id) {
			ps.add(line, join(path, "id"), "invalid id %q (want INT- followed by at least 3 digits, e.g. INT-001)", id)
		}
		in.ID = id
	}
	in.Summary, _ = ps.str(f["summary"], join(path, "summary"), true, n.Line)

	if s := f["scope"]; !isNull(s) {
		sp := join(path, "scope")
		if sf := ps.fields(s, sp, "allow_glob", "deny_glob", "ask_glob"); sf != nil {
			in.AllowGlob = ps.globs(sf["allow_glob"], join(sp, "allow_glob"))
			in.DenyGlob = ps.globs(sf["deny_glob"], join(sp, "deny_glob"))
			in.AskGlob = ps.globs(sf["ask_glob"], join(sp, "ask_glob"))
		}
	}

	if c := f["constraints"]; !isNull(c) {
		cp := join(path, "constraints")
		if cf := ps.fields(c, cp, "disallow_tools", "disallow_patterns", "ask_tools", "ask_patterns"); cf != nil {
			in.DisallowTools = ps.toolGlobs(cf["disallow_tools"], join(cp, "disallow_tools"))
			in.DisallowPatterns, in.res = ps.patterns(cf["disallow_patterns"], join(cp, "disallow_patterns"))
			in.AskTools = ps.toolGlobs(cf["ask_tools"], join(cp, "ask_tools"))
			in.AskPatterns, in.askRes = ps.patterns(cf["ask_patterns"], join(cp, "ask_patterns"))
		}
	}

	crits := map[string]int{}
	for i, cn := range ps.seq(f["acceptance_criteria"], join(path, "acceptance_criteria")) {
		cp := index(join(path, "acceptance_criteria"), i)
		cf := ps.fields(cn, cp, "id", "description", "status")
		if cf == nil {
			continue
		}
		var c Criterion
		var ok bool
		if c.ID, ok = ps.str(cf["id"], join(cp, "id"), true, cn.Line); ok {
			if first, dup := crits[c.ID]; dup {
				ps.add(cf["id"].Line, join(cp, "id"), "duplicate criterion id %q (first at line %d)", c.ID, first)
			} else {
				crits[c.ID] = cf["id"].Line
			}
		}
		c.Description, _ = ps.str(cf["description"], join(cp, "description"), true, cn.Line)
		c.Status = StatusPending
		if st, ok := ps.str(cf["status"], join(cp, "status"), false, cn.Line); ok && !isNull(cf["status"]) {
			switch st {
			case StatusPending, StatusMet, StatusFailed:
				c.Status = st
			default:
				ps.add(cf["status"].Line, join(cp, "status"), "invalid status %q (want pending, met or failed)", st)
			}
		}
		in.Criteria = append(in.Criteria, c)
	}
	return in, len(ps.probs) == before
}

// toolGlobs validates a list of tool names or globs (disallow_tools,
// ask_tools).
func (ps *parser) toolGlobs(n *yaml.Node, path string) []string {
	var out []string
	for _, it := range ps.strList(n, path) {
		switch {
		case strings.TrimSpace(it.val) == "":
			ps.add(it.line, it.path, "empty tool name")
		case !doublestar.ValidatePattern(it.val):
			ps.add(it.line, it.path, "invalid tool glob %q", it.val)
		default:
			out = append(out, it.val)
		}
	}
	return out
}

// patterns validates and compiles a list of regexps (disallow_patterns,
// ask_patterns).
func (ps *parser) patterns(n *yaml.Node, path string) ([]string, []*regexp.Regexp) {
	var srcs []string
	var res []*regexp.Regexp
	for _, it := range ps.strList(n, path) {
		if it.val == "" {
			ps.add(it.line, it.path, "empty pattern (it would match every call)")
			continue
		}
		re, err := regexp.Compile(it.val)
		if err != nil {
			ps.add(it.line, it.path, "invalid regexp: %v", err)
			continue
		}
		srcs = append(srcs, it.val)
		res = append(res, re)
	}
	return srcs, res
}

// globs validates and normalises a list of workspace globs.
func (ps *parser) globs(n *yaml.Node, path string) []string {
	var out []string
	for _, it := range ps.strList(n, path) {
		g, msg := normalizeGlob(it.val)
		if msg != "" {
			ps.add(it.line, it.path, "%q: %s", it.val, msg)
			continue
		}
		out = append(out, g)
	}
	return out
}

// normalizeGlob strips leading "./" and checks the glob is a valid,
// workspace-relative doublestar pattern; msg is non-empty when it is not.
func normalizeGlob(g string) (string, string) {
	for strings.HasPrefix(g, "./") {
		g = strings.TrimLeft(g[2:], "/")
	}
	if g == "" {
		return "", "empty glob"
	}
	if strings.HasPrefix(g, "/") {
		return "", `globs are relative to the workspace root (no leading "/")`
	}
	for _, seg := range strings.Split(g, "/") {
		if seg == ".." {
			return "", `globs are relative to the workspace root (no ".." segments)`
		}
	}
	if !doublestar.ValidatePattern(g) {
		return "", "invalid glob"
	}
	return g, ""
}
