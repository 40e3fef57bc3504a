package shell

import (
	"slices"
	"strings"
)

// Writers beyond the coreutils: script interpreters editing in place, patch,
// and the git subcommands that change the working tree.

// inPlaceSpec describes the options of a command that edits files in
// place (sed -i, perl -i, ruby -i): its script comes from a script option or,
// without one, from the first operand; every later operand is edited.
type inPlaceSpec struct {
	what          string // how a target is named in a refusal
	scriptShort   string // short options that give the script (its value follows)
	valueShort    string // short options taking a value, attached or the next word
	attachedShort string // short options whose value is the rest of the word only
	inPlaceLong   string // the long in-place option ("" when none)
	scriptLong    []string
	valueLong     []string
}

// perlInPlace and rubyInPlace: -i in a bundle (-pi, -i.bak), the script in
// -e/-E, and options whose value is attached (-Ilib, -MFoo).
var (
	perlInPlace = inPlaceSpec{what: "the perl -i file", scriptShort: "eE", attachedShort: "IMmxCd"}
	rubyInPlace = inPlaceSpec{what: "the ruby -i file", scriptShort: "eE", attachedShort: "IMmxCd"}
)

// inPlace records the files a command edits in place when its in-place
// option is given.
func (a *shellAnalysis) inPlace(rest []shArg, dir cwd, spec inPlaceSpec) {
	inPlace, script := false, false
	var files []shArg
	for i := 0; i < len(rest); i++ {
		r := rest[i]
		switch {
		case r.ok && r.lit == "--":
			files = append(files, rest[i+1:]...)
			i = len(rest)
		case r.isOption() && strings.HasPrefix(r.lit, "--"):
			name, _, hasVal := strings.Cut(r.lit[2:], "=")
			switch {
			case spec.inPlaceLong != "" && name == spec.inPlaceLong:
				inPlace = true
			case slices.Contains(spec.scriptLong, name):
				script = true
				if !hasVal {
					i++
				}
			case slices.Contains(spec.valueLong, name):
				if !hasVal {
					i++
				}
			}
		case r.isOption():
		bundle:
			for j := 1; j < len(r.lit); j++ {
				c := r.lit[j]
				switch {
				case c == 'i':
					inPlace = true
					break bundle // the rest is the backup suffix
				case strings.IndexByte(spec.scriptShort, c) >= 0:
					script = true
					if j+1 == len(r.lit) {
						i++ // the script is the next word
					}
					break bundle
				case strings.IndexByte(spec.valueShort, c) >= 0:
					if j+1 == len(r.lit) {
						i++
					}
					break bundle
				case strings.IndexByte(spec.attachedShort, c) >= 0:
					break bundle // the rest of the word is this option's value
				}
			}
		case !script:
			script = true // the first operand is the script
		default:
			files = append(files, r)
		}
	}
	if !inPlace {
		return
	}
	for _, f := range files {
		a.arg(f, dir, spec.what)
	}
}

// patch records the file named on its command line; without one, the files
// are named inside the patch, which shepherd does not read.
func (a *shellAnalysis) patch(rest []shArg, dir cwd) {
	p := parseArgs(rest, optSpec{short: "pdiorBDFVYzg", long: []string{"strip", "directory", "input", "output", "reject-file", "prefix", "suffix", "fuzz", "backup-if-mismatch", "quoting-style", "version-control", "get"}})
	for _, f := range append(p.vals["o"], p.vals["output"]...) {
		a.arg(f, dir, "the patch output")
	}
	for _, r := range rest {
		if r.ok && (r.lit == "--dry-run" || r.lit == "-C" || r.lit == "--check") {
			return
		}
	}
	if len(p.pos) == 0 {
		a.fail("patch writes the files its patch names, which shepherd does not read")
		return
	}
	a.arg(p.pos[0], dir, "the patch target")
}

// gitTreeWriters are git subcommands that change files of the working tree
// whose names are not on the command line (or not only there).
var gitTreeWriters = map[string]bool{
	"apply": true, "am": true, "checkout": true, "switch": true, "restore": true,
	"reset": true, "stash": true, "merge": true, "rebase": true, "pull": true,
	"cherry-pick": true, "revert": true, "clean": true, "clone": true, "init": true,
	"worktree": true, "submodule": true,
}

// git records git mv/rm operands and refuses to guess for the subcommands
// that rewrite the working tree (checkout, apply, reset, ...). Read-only and
// repository-only subcommands (status, diff, log, add, commit, ...) write
// no workspace file.
func (a *shellAnalysis) git(rest []shArg, dir cwd) {
	i := 0
	for ; i < len(rest); i++ {
		r := rest[i]
		if !r.ok {
			a.fail("the git argument %s is not literal", wordText(r.w))
			return
		}
		if !strings.HasPrefix(r.lit, "-") {
			break
		}
		switch r.lit {
		case "-C":
			if i+1 < len(rest) {
				dir = a.cd(rest[i+1:i+2], dir) // git runs as if started there
			}
			i++
		case "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path":
			i++ // takes a value
		}
	}
	if i >= len(rest) {
		return
	}
	sub, args := rest[i].lit, rest[i+1:]
	switch {
	case sub == "mv" || sub == "rm":
		for _, p := range parseArgs(args, optSpec{}).pos {
			a.arg(p, dir, "the git "+sub+" operand")
		}
	case gitTreeWriters[sub]:
		a.fail("git %s changes working-tree files shepherd cannot list", sub)
	}
}
