package shell

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shArg is one argument of a simple command: its word and, when the word
// is literal, its value.
type shArg struct {
	w   *syntax.Word
	lit string
	ok  bool // lit is the word's value
}

func (s shArg) isOption() bool { return s.ok && len(s.lit) > 1 && s.lit[0] == '-' }

// optSpec names a command's options that take a value: short letters and
// long names.
type optSpec struct {
	short string
	long  []string
}

func (o optSpec) takesLong(name string) bool { return slices.Contains(o.long, name) }

// parsedArgs is a command line split into options and operands.
type parsedArgs struct {
	pos   []shArg
	flags map[string]bool    // options seen (short letter or long name)
	vals  map[string][]shArg // values of value options
}

// parseArgs splits args (after the command name) per spec, GNU style:
// options may follow operands, short options bundle (-fr), a value follows
// its option attached or as the next argument, and "--" ends the options.
func parseArgs(args []shArg, spec optSpec) parsedArgs {
	p := parsedArgs{flags: map[string]bool{}, vals: map[string][]shArg{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a.ok && a.lit == "--":
			p.pos = append(p.pos, args[i+1:]...)
			return p
		case a.isOption() && strings.HasPrefix(a.lit, "--"):
			name, val, hasVal := strings.Cut(a.lit[2:], "=")
			p.flags[name] = true
			if !spec.takesLong(name) {
				continue
			}
			switch {
			case hasVal:
				p.vals[name] = append(p.vals[name], shArg{w: a.w, lit: val, ok: true})
			case i+1 < len(args):
				i++
				p.vals[name] = append(p.vals[name], args[i])
			}
		case a.isOption():
			for j := 1; j < len(a.lit); j++ {
				c := a.lit[j : j+1]
				p.flags[c] = true
				if !strings.Contains(spec.short, c) {
					continue
				}
				if j+1 < len(a.lit) {
					p.vals[c] = append(p.vals[c], shArg{w: a.w, lit: a.lit[j+1:], ok: true})
				} else if i+1 < len(args) {
					i++
					p.vals[c] = append(p.vals[c], args[i])
				}
				break
			}
		default:
			p.pos = append(p.pos, a)
		}
	}
	return p
}

// writeSpecs are the value options of the commands that write their
// operands.
var writeSpecs = map[string]optSpec{
	"rm":       {},
	"rmdir":    {},
	"unlink":   {},
	"shred":    {short: "ns", long: []string{"iterations", "size", "random-source"}},
	"touch":    {short: "dtr", long: []string{"date", "reference", "time"}},
	"mkdir":    {short: "mZ", long: []string{"mode"}},
	"truncate": {short: "sr", long: []string{"size", "reference"}},
	"tee":      {},
}

// wrappers run the rest of their arguments as a command; the value is
// their options that take a value.
var wrappers = map[string]optSpec{
	"sudo":    {short: "ugCDhpRrtTU", long: []string{"user", "group", "chdir", "host", "prompt", "role", "type", "other-user", "close-from"}},
	"doas":    {short: "uC"},
	"env":     {short: "uCS", long: []string{"unset", "chdir", "split-string"}},
	"command": {},
	"builtin": {},
	"exec":    {short: "a"},
	"nohup":   {},
	"nice":    {short: "n", long: []string{"adjustment"}},
	"time":    {short: "fo", long: []string{"format", "output"}},
	"timeout": {short: "sk", long: []string{"signal", "kill-after"}},
	"stdbuf":  {short: "ioe", long: []string{"input", "output", "error"}},
}

var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "ash": true}

// call analyses a simple command and returns the directory after it.
func (a *shellAnalysis) call(words []*syntax.Word, dir cwd, depth int) cwd {
	if len(words) == 0 {
		return dir
	}
	a.words(depth, dir, words...)
	args := make([]shArg, len(words))
	for i, w := range words {
		lit, ok := literal(w)
		args[i] = shArg{w: w, lit: lit, ok: ok}
	}
	return a.run(args, dir, depth)
}

func (a *shellAnalysis) run(args []shArg, dir cwd, depth int) cwd {
	if len(args) == 0 {
		return dir
	}
	if !args[0].ok {
		a.fail("the command name %s is not literal", wordText(args[0].w))
		return dir
	}
	name := path.Base(args[0].lit)
	rest := args[1:]
	if spec, ok := wrappers[name]; ok {
		return a.wrapped(name, rest, spec, dir, depth)
	}
	if shells[name] {
		a.shell(rest, dir, depth)
		return dir
	}
	if spec, ok := writeSpecs[name]; ok {
		a.operands(name, parseArgs(rest, spec).pos, dir)
		return dir
	}
	switch name {
	case "cd", "pushd":
		return a.cd(rest, dir)
	case "popd":
		return ""
	case "cp", "mv", "ln", "install":
		a.copyLike(name, rest, dir)
	case "dd":
		for _, arg := range rest {
			if !arg.ok {
				if strings.HasPrefix(wordText(arg.w), `"of=`) {
					a.fail("the dd output %s is not a literal path", wordText(arg.w))
				}
				continue
			}
			if of, found := strings.CutPrefix(arg.lit, "of="); found {
				a.addTarget(of, dir, "the dd output")
			}
		}
	case "sed":
		a.sed(rest, dir)
	case "perl":
		a.inPlace(rest, dir, perlInPlace)
	case "ruby":
		a.inPlace(rest, dir, rubyInPlace)
	case "patch":
		a.patch(rest, dir)
	case "git":
		a.git(rest, dir)
	case "eval", "source", ".":
		a.fail("%s runs code shepherd cannot analyse", name)
	case "trap":
		if len(rest) > 1 {
			a.fail("trap runs code shepherd cannot analyse")
		}
	case "xargs", "parallel":
		a.fail("%s runs commands on names read from its input, which shepherd cannot see", name)
	case "find":
		for _, arg := range rest {
			switch arg.lit {
			case "-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls":
				a.fail("find %s acts on files shepherd cannot list", arg.lit)
			}
		}
	}
	return dir
}

// operands records every operand of a writing command as a target.
// The targets of rm, rmdir and unlink are also recorded as removed.
func (a *shellAnalysis) operands(name string, pos []shArg, dir cwd) {
	removes := name == "rm" || name == "rmdir" || name == "unlink"
	for _, p := range pos {
		t := a.arg(p, dir, "the "+name+" target")
		if removes && t != "" && !slices.Contains(a.removed, t) {
			a.removed = append(a.removed, t)
		}
	}
}

// arg records the target p and returns it as recorded ("" when it is not).
func (a *shellAnalysis) arg(p shArg, dir cwd, what string) string {
	if !p.ok {
		a.fail("%s %s is not a literal path", what, wordText(p.w))
		return ""
	}
	return a.addTarget(p.lit, dir, what)
}

// wrapped skips a wrapper's options (env's NAME=value assignments,
// timeout's duration) and analyses the command it runs.
func (a *shellAnalysis) wrapped(name string, rest []shArg, spec optSpec, dir cwd, depth int) cwd {
	i := 0
	needOperand := name == "timeout" // timeout DURATION COMMAND
	inner := dir
loop:
	for i < len(rest) {
		r := rest[i]
		switch {
		case r.ok && r.lit == "--":
			i++
			break loop
		case r.isOption():
			if name == "env" && (strings.HasPrefix(r.lit, "-S") || strings.HasPrefix(r.lit, "--split-string")) {
				a.fail("env -S runs a command line shepherd does not analyse")
				return dir
			}
			if r.lit == "-C" || r.lit == "-D" || strings.HasPrefix(r.lit, "--chdir") {
				inner = "" // runs in another directory
			}
			i++
			switch {
			case !strings.HasPrefix(r.lit, "--") && len(r.lit) == 2 && strings.Contains(spec.short, r.lit[1:]):
				i++ // its value
			case strings.HasPrefix(r.lit, "--") && !strings.Contains(r.lit, "=") && spec.takesLong(r.lit[2:]):
				i++
			}
		case name == "env" && r.ok && strings.Contains(r.lit, "=") && !strings.HasPrefix(r.lit, "="):
			i++
		case needOperand:
			needOperand = false
			i++
		default:
			break loop
		}
	}
	if i >= len(rest) {
		return dir
	}
	after := a.run(rest[i:], inner, depth)
	if name == "command" || name == "builtin" {
		return after
	}
	return dir
}

// shell analyses "bash -c script" (with any options, e.g. -lc); a shell
// running a script file is not analysed.
func (a *shellAnalysis) shell(rest []shArg, dir cwd, depth int) {
	command := false
	for i := 0; i < len(rest); i++ {
		r := rest[i]
		switch {
		case r.ok && (r.lit == "-o" || r.lit == "+o" || r.lit == "-O" || r.lit == "+O"):
			i++
		case r.ok && r.lit == "--":
			continue
		case r.isOption() && !strings.HasPrefix(r.lit, "--"):
			if strings.Contains(r.lit, "c") {
				command = true
			}
		case r.isOption():
		default:
			if !command {
				return
			}
			if !r.ok {
				a.fail("the script of the shell -c is not literal")
				return
			}
			a.script(r.lit, dir, depth+1)
			return
		}
	}
}

// cd returns the directory after "cd args" run in dir.
func (a *shellAnalysis) cd(rest []shArg, dir cwd) cwd {
	pos := parseArgs(rest, optSpec{}).pos
	if len(pos) != 1 || !pos[0].ok || pos[0].lit == "" || pos[0].lit == "-" {
		return ""
	}
	to := pos[0].lit
	if path.IsAbs(to) {
		return path.Clean(to)
	}
	if dir == "" {
		return ""
	}
	return path.Join(dir, to)
}

// copyLike records the destination of cp, ln and install, and both ends of
// mv (its sources disappear).
func (a *shellAnalysis) copyLike(name string, rest []shArg, dir cwd) {
	spec := optSpec{short: "tS", long: []string{"target-directory", "suffix"}}
	if name == "install" {
		spec = optSpec{short: "tSmogZ", long: []string{"target-directory", "suffix", "mode", "owner", "group"}}
	}
	p := parseArgs(rest, spec)
	what := "the " + name + " destination"
	if name == "mv" {
		for _, src := range p.pos {
			a.arg(src, dir, "the mv operand")
		}
	}
	if ts := append(p.vals["t"], p.vals["target-directory"]...); len(ts) > 0 {
		for _, t := range ts {
			a.arg(t, dir, what)
		}
		return
	}
	switch {
	case name == "install" && p.flags["d"]:
		for _, d := range p.pos {
			a.arg(d, dir, "the install directory")
		}
	case name == "mv":
	case len(p.pos) >= 2:
		a.arg(p.pos[len(p.pos)-1], dir, what)
	case len(p.pos) == 1 && name == "ln":
		src := p.pos[0]
		if !src.ok {
			a.fail("%s %s is not a literal path", what, wordText(src.w))
			return
		}
		a.addTarget(path.Base(src.lit), dir, what)
	}
}

// sedInPlace: sed's -i/--in-place, its script options -e/-f
// (--expression, --file) and -l (--line-length), which takes a value.
var sedInPlace = inPlaceSpec{
	what: "the sed -i file", scriptShort: "ef", valueShort: "l",
	inPlaceLong: "in-place", scriptLong: []string{"expression", "file"}, valueLong: []string{"line-length"},
}

// sed records the files of "sed -i".
func (a *shellAnalysis) sed(rest []shArg, dir cwd) { a.inPlace(rest, dir, sedInPlace) }
