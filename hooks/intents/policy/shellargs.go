package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// ShellArgs says which tools run shell commands and where in their
// arguments the command and its working directory are. Build it with
// ParseShellArgs; it is immutable and safe for concurrent use. A nil
// *ShellArgs knows no tool.
type ShellArgs struct {
	byTool map[string]shellArg
}

type shellArg struct {
	path string // gjson path of the command
	argv bool   // the command is an argument vector, not a script
	dir  string // gjson path of the working directory, "" for none
}

// ShellCommand is one command a tool call runs: a script for the shell
// (Script) or an argument vector (Argv), run in Dir ("" for the workspace
// root; a relative Dir is relative to it).
type ShellCommand struct {
	Script string
	Argv   []string
	Dir    string
}

// ParseShellArgs builds a ShellArgs from entries of the form
// "Tool:argpath" (the argument is a shell script, or an array of scripts
// run one after another), "Tool:argv(argpath)" (the argument is an argument
// vector such as ["bash", "-lc", "make"]), each optionally followed by
// "@dirpath", the argument holding the working directory (e.g.
// "shell:argv(command)@workdir"; "@a|b" names alternatives, the first
// present wins: "run_shell_command:command@dir_path|directory"). Paths are gjson paths. A tool has at most
// one entry. The error, when not nil, names every bad entry.
func ParseShellArgs(entries []string) (*ShellArgs, error) {
	sa := &ShellArgs{byTool: map[string]shellArg{}}
	var bad []string
	for _, e := range entries {
		tool, spec, found := strings.Cut(e, ":")
		tool, spec = strings.TrimSpace(tool), strings.TrimSpace(spec)
		if !found || tool == "" || spec == "" {
			bad = append(bad, fmt.Sprintf(`%q: want "Tool:argpath", "Tool:argv(argpath)", optionally followed by "@dirpath"`, e))
			continue
		}
		var sg shellArg
		spec, sg.dir, _ = strings.Cut(spec, "@")
		if inner, ok := strings.CutPrefix(spec, "argv("); ok {
			if !strings.HasSuffix(inner, ")") || len(inner) == 1 {
				bad = append(bad, fmt.Sprintf(`%q: want "Tool:argv(argpath)" with a non-empty argpath`, e))
				continue
			}
			spec, sg.argv = inner[:len(inner)-1], true
		}
		sg.path = spec
		if msg := checkArgPath(sg.path); msg != "" {
			bad = append(bad, fmt.Sprintf("%q: %s", e, msg))
			continue
		}
		if msg := checkDirPaths(sg.dir); msg != "" {
			bad = append(bad, fmt.Sprintf("%q: directory: %s", e, msg))
			continue
		}
		if have, dup := sa.byTool[tool]; dup && have != sg {
			bad = append(bad, fmt.Sprintf("%q: tool %s already has an entry", e, tool))
			continue
		}
		sa.byTool[tool] = sg
	}
	if len(bad) > 0 {
		return nil, errors.New("invalid shell argument entries: " + strings.Join(bad, "; "))
	}
	return sa, nil
}

// Commands returns the commands a call of tool with the JSON arguments args
// runs. known is false (and err nil) when the table has no entry for tool.
// err is non-nil when args is not valid JSON or the command argument is
// missing or of the wrong type; the caller should then treat the call as
// one it cannot analyse. A missing or non-string directory is ignored.
func (sa *ShellArgs) Commands(tool string, args []byte) (cmds []ShellCommand, known bool, err error) {
	if sa == nil {
		return nil, false, nil
	}
	sg, ok := sa.byTool[tool]
	if !ok {
		return nil, false, nil
	}
	if !gjson.ValidBytes(args) {
		return nil, true, fmt.Errorf("%s: arguments are not valid JSON", tool)
	}
	root := gjson.ParseBytes(args)
	dir := ""
	for p := range strings.SplitSeq(sg.dir, "|") {
		if p == "" {
			break
		}
		if d := root.Get(p); d.Type == gjson.String {
			dir = d.Str
			break
		}
	}
	v := root.Get(sg.path)
	switch {
	case !v.Exists():
		return nil, true, fmt.Errorf("%s: argument %q is missing", tool, sg.path)
	case sg.argv:
		if !v.IsArray() {
			return nil, true, fmt.Errorf("%s: argument %q is not an array of strings", tool, sg.path)
		}
		var argv []string
		for _, el := range v.Array() {
			if el.Type != gjson.String {
				return nil, true, fmt.Errorf("%s: argument %q is not an array of strings", tool, sg.path)
			}
			argv = append(argv, el.Str)
		}
		return []ShellCommand{{Argv: argv, Dir: dir}}, true, nil
	case v.Type == gjson.String:
		return []ShellCommand{{Script: v.Str, Dir: dir}}, true, nil
	case v.IsArray():
		for _, el := range v.Array() {
			if el.Type != gjson.String {
				return nil, true, fmt.Errorf("%s: argument %q is not a string or an array of strings", tool, sg.path)
			}
			cmds = append(cmds, ShellCommand{Script: el.Str, Dir: dir})
		}
		return cmds, true, nil
	}
	return nil, true, fmt.Errorf("%s: argument %q is not a string or an array of strings", tool, sg.path)
}

// Knows reports whether the table has an entry for tool.
func (sa *ShellArgs) Knows(tool string) bool {
	if sa == nil {
		return false
	}
	_, ok := sa.byTool[tool]
	return ok
}

// inferredKeys are the arguments InferPaths reads as file paths.
var inferredKeys = []string{"path", "file_path", "filepath", "filePath", "notebook_path", "paths", "files.#.path", "target_file"}

// InferPaths returns the file paths a call of a tool no table lists
// probably touches: the string (or array of strings) arguments named path,
// file_path, filepath, filePath, notebook_path, paths, target_file and
// files[].path, and the files an apply_patch-format patch in input or patch
// names. Arguments that are absent or of another type are skipped. err is
// non-nil when a value that looks like a patch cannot be parsed.
func InferPaths(args []byte) (paths []string, err error) {
	if !gjson.ValidBytes(args) {
		return nil, nil
	}
	root := gjson.ParseBytes(args)
	if !root.IsObject() {
		return nil, nil
	}
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	for _, k := range inferredKeys {
		v := root.Get(k)
		if v.Type == gjson.String {
			add(v.Str)
			continue
		}
		if v.IsArray() {
			for _, el := range v.Array() {
				if el.Type == gjson.String {
					add(el.Str)
				}
			}
		}
	}
	for _, k := range []string{"input", "patch"} {
		v := root.Get(k)
		if v.Type != gjson.String || !strings.Contains(v.Str, "*** ") {
			continue
		}
		if !strings.Contains(v.Str, "*** Begin Patch") && !strings.Contains(v.Str, " File: ") {
			continue
		}
		ps, perr := PatchPaths(v.Str)
		if perr != nil {
			return paths, fmt.Errorf("argument %q: %w", k, perr)
		}
		for _, p := range ps {
			add(p)
		}
	}
	return paths, nil
}

// checkDirPaths checks the alternatives of a directory argpath ("a|b"),
// "" when there are none or all are valid.
func checkDirPaths(dir string) string {
	if dir == "" {
		return ""
	}
	for d := range strings.SplitSeq(dir, "|") {
		if msg := checkArgPath(d); msg != "" {
			return msg
		}
	}
	return ""
}
