// Package shell finds the files a shell command writes (redirections, tee, sed -i, cp, mv, rm, …)
// by parsing it with mvdan.cc/sh, so intents can check them against the active
// intent's scope. It is pure: it never runs a command or touches the filesystem.
package shell

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Writes is what Analyze found in a shell command.
type Writes struct {
	// Targets are the files and directories the command writes, creates,
	// truncates, moves or removes (a statement's redirections before its
	// command), de-duplicated. A
	// relative target is joined to the directory the command was in when it
	// ran (a literal "cd dir" moves it), so it is relative to the directory
	// the whole command starts in. Glob patterns (src/*.go) are kept as
	// written: a pattern can only expand below its literal directory.
	Targets []string
	// Removed lists the Targets that rm, rmdir or unlink remove, in the
	// same form (a subset of Targets, in their order of first removal).
	Removed []string
	// Unparsed, when not empty, says why the analysis is incomplete (the
	// command could not be parsed, a target or command name is dynamic, the
	// command runs code shepherd cannot see such as eval or xargs). Targets
	// still lists what was found.
	Unparsed string
}

// maxShellDepth bounds nested "bash -c" scripts.
const maxShellDepth = 8

// Analyze parses script as a bash command line and extracts the files
// it writes through the shell itself: redirections (>, >>, &>, >|, <>, but
// not /dev/null or fd duplications), and the commands tee, sed -i, cp, mv
// (source and destination), rm, rmdir, unlink, shred, touch, mkdir, ln,
// truncate, install and dd of=. It follows lists (;, &&, ||), pipelines,
// subshells, blocks, conditionals and loops, function bodies, command and
// process substitutions, here-documents, "bash -c"/"sh -c" scripts, and the
// wrappers sudo, env, command, exec, nohup, nice, time and timeout. Programs
// the command runs (python, make, git) may write files too; those writes are
// not visible to a syntax analysis and are not reported.
//
// It never panics and does not touch the filesystem. It is safe for
// concurrent use.
func Analyze(script string) Writes {
	a := &shellAnalysis{seen: map[string]bool{}}
	a.script(script, ".", 0)
	return Writes{Targets: a.targets, Removed: a.removed, Unparsed: a.unparsed}
}

// AnalyzeArgv analyses a command given as an argument vector (Codex shell's
// ["bash", "-lc", "..."]) as Analyze does.
func AnalyzeArgv(argv []string) Writes {
	if len(argv) == 0 {
		return Writes{}
	}
	quoted := make([]string, len(argv))
	for i, s := range argv {
		q, err := syntax.Quote(s, syntax.LangBash)
		if err != nil {
			return Writes{Unparsed: fmt.Sprintf("argument %d cannot be quoted for the shell: %v", i, err)}
		}
		quoted[i] = q
	}
	return Analyze(strings.Join(quoted, " "))
}

type shellAnalysis struct {
	targets  []string
	seen     map[string]bool
	removed  []string
	unparsed string
}

// cwd is the directory a command runs in: a clean path relative to the
// start directory (or absolute), or "" when it is unknown.
type cwd = string

func (a *shellAnalysis) fail(format string, args ...any) {
	if a.unparsed == "" {
		a.unparsed = fmt.Sprintf(format, args...)
	}
}

func (a *shellAnalysis) script(src, dir cwd, depth int) cwd {
	if depth > maxShellDepth {
		a.fail("shell scripts are nested more than %d deep", maxShellDepth)
		return dir
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		a.fail("the command cannot be parsed: %v", err)
		return dir
	}
	return a.stmts(f.Stmts, dir, depth)
}

func (a *shellAnalysis) stmts(ss []*syntax.Stmt, dir cwd, depth int) cwd {
	for _, s := range ss {
		dir = a.stmt(s, dir, depth)
	}
	return dir
}

// stmt analyses one statement and returns the directory the next statement
// of the same list runs in.
func (a *shellAnalysis) stmt(s *syntax.Stmt, dir cwd, depth int) cwd {
	if s == nil {
		return dir
	}
	for _, r := range s.Redirs {
		a.redirect(r, dir, depth)
	}
	next := a.command(s.Cmd, dir, depth)
	if s.Background || s.Coprocess {
		return dir
	}
	return next
}

func (a *shellAnalysis) redirect(r *syntax.Redirect, dir cwd, depth int) {
	a.words(depth, dir, r.Word, r.Hdoc)
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll,
		syntax.RdrAllClob, syntax.AppAllClob:
	case syntax.DplOut:
		// ">&word" writes to a file unless word is a descriptor or "-".
		if lit, ok := literal(r.Word); ok && (lit == "-" || isDigits(lit)) {
			return
		}
	default:
		return
	}
	a.target(r.Word, dir, "the redirection target")
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// command analyses one command and returns the directory after it.
func (a *shellAnalysis) command(c syntax.Command, dir cwd, depth int) cwd {
	switch c := c.(type) {
	case nil:
		return dir
	case *syntax.CallExpr:
		for _, as := range c.Assigns {
			a.assign(as, dir, depth)
		}
		return a.call(c.Args, dir, depth)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt:
			return a.stmt(c.Y, a.stmt(c.X, dir, depth), depth)
		case syntax.OrStmt:
			// Y runs only when X failed, so perhaps before X's cd.
			x := a.stmt(c.X, dir, depth)
			y := a.stmt(c.Y, merge(dir, x), depth)
			return merge(x, y)
		default: // pipelines run each side in a subshell
			a.stmt(c.X, dir, depth)
			a.stmt(c.Y, dir, depth)
			return dir
		}
	case *syntax.Subshell:
		a.stmts(c.Stmts, dir, depth)
		return dir
	case *syntax.Block:
		return a.stmts(c.Stmts, dir, depth)
	case *syntax.IfClause:
		out := dir
		for ic := c; ic != nil; ic = ic.Else {
			cond := a.stmts(ic.Cond, dir, depth)
			out = merge(out, a.stmts(ic.Then, cond, depth))
		}
		return out
	case *syntax.WhileClause:
		d := a.stmts(c.Cond, dir, depth)
		d = a.stmts(c.Do, d, depth)
		return merge(dir, d)
	case *syntax.ForClause:
		a.loop(c.Loop, dir, depth)
		return merge(dir, a.stmts(c.Do, dir, depth))
	case *syntax.CaseClause:
		a.words(depth, dir, c.Word)
		out := dir
		for _, it := range c.Items {
			a.words(depth, dir, it.Patterns...)
			out = merge(out, a.stmts(it.Stmts, dir, depth))
		}
		return out
	case *syntax.FuncDecl:
		// The body may run later, from anywhere: analyse it where it is.
		a.stmt(c.Body, dir, depth)
		return dir
	case *syntax.DeclClause:
		for _, as := range c.Args {
			a.assign(as, dir, depth)
		}
		return dir
	case *syntax.TimeClause:
		return a.stmt(c.Stmt, dir, depth)
	case *syntax.CoprocClause:
		a.stmt(c.Stmt, dir, depth)
		return dir
	case *syntax.TestClause, *syntax.ArithmCmd, *syntax.LetClause:
		a.nodes(c, dir, depth)
		return dir
	}
	a.fail("a %T command is not analysed", c)
	return dir
}

func (a *shellAnalysis) loop(l syntax.Loop, dir cwd, depth int) {
	switch l := l.(type) {
	case *syntax.WordIter:
		a.words(depth, dir, l.Items...)
	case nil:
	default:
		a.nodes(l, dir, depth)
	}
}

func (a *shellAnalysis) assign(as *syntax.Assign, dir cwd, depth int) {
	if as == nil {
		return
	}
	a.words(depth, dir, as.Value)
	if as.Array != nil {
		a.nodes(as.Array, dir, depth)
	}
	if as.Index != nil {
		a.nodes(as.Index, dir, depth)
	}
}

// words analyses the command and process substitutions inside words (they
// run as the enclosing command is expanded).
func (a *shellAnalysis) words(depth int, dir cwd, ws ...*syntax.Word) {
	for _, w := range ws {
		if w != nil {
			a.nodes(w, dir, depth)
		}
	}
}

// nodes finds the substitutions anywhere below n and analyses their
// statements in a subshell at dir.
func (a *shellAnalysis) nodes(n syntax.Node, dir cwd, depth int) {
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			a.stmts(n.Stmts, dir, depth)
			return false
		case *syntax.ProcSubst:
			a.stmts(n.Stmts, dir, depth)
			return false
		}
		return true
	})
}

// merge is the directory after one of two paths ran: unknown when they
// differ.
func merge(x, y cwd) cwd {
	if x == y {
		return x
	}
	return ""
}

// target records the file word names, run from dir; what describes the word
// for the unparsed reason.
func (a *shellAnalysis) target(w *syntax.Word, dir cwd, what string) {
	lit, ok := literal(w)
	if !ok {
		a.fail("%s %s is not a literal path", what, wordText(w))
		return
	}
	a.addTarget(lit, dir, what)
}

// addTarget records p, run from dir, and returns it as recorded ("" when
// it is not recorded: empty, a device, or relative to an unknown dir).
func (a *shellAnalysis) addTarget(p string, dir cwd, what string) string {
	switch {
	case p == "":
		a.fail("%s is empty", what)
		return ""
	case isDevice(p):
		return ""
	case !path.IsAbs(p) && dir == "":
		a.fail("%s %q is relative to a directory shepherd cannot resolve", what, p)
		return ""
	case !path.IsAbs(p):
		p = path.Join(dir, p)
	}
	if !a.seen[p] {
		a.seen[p] = true
		a.targets = append(a.targets, p)
	}
	return p
}

// isDevice reports the device files writing to which changes no file.
func isDevice(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/")
}

// wordText prints w for a message.
func wordText(w *syntax.Word) string {
	if w == nil {
		return `""`
	}
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, w); err != nil {
		return "(a word)"
	}
	return quote(b.String())
}

// literal returns the value of a word made only of literal text (plain,
// single- or double-quoted, with escapes resolved). Words with expansions,
// a leading "~" or a brace expansion are not literal.
func literal(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", false
	}
	var b strings.Builder
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				return "", false
			}
			if strings.ContainsAny(p.Value, "{}") {
				return "", false
			}
			b.WriteString(unescape(p.Value, false))
		case *syntax.SglQuoted:
			if p.Dollar && strings.Contains(p.Value, `\`) {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, dp := range p.Parts {
				lit, ok := dp.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(unescape(lit.Value, true))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// unescape resolves backslash escapes of unquoted (every character) or
// double-quoted ($ ` " \ and newline only) text.
func unescape(s string, dquoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			n := s[i+1]
			if !dquoted || strings.IndexByte("$`\"\\\n", n) >= 0 {
				i++
				if n != '\n' {
					b.WriteByte(n)
				}
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func quote(s string) string { return `"` + s + `"` }
