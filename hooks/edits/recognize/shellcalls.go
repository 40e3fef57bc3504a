package recognize

import (
	"fmt"
	"path"
	"strings"

	"github.com/shepherd-proxy/shepherd/hooks/intents/policy"
	"github.com/shepherd-proxy/shepherd/hooks/intents/shell"
)

// shellEdits lists the files commands write: one Edit per target (OpDelete
// for a removal, OpWrite otherwise), joined to the command's directory.
// An apply_patch run through the shell (Codex's ["apply_patch", patch])
// is read as the patch.
func shellEdits(cmds []policy.ShellCommand) ([]Edit, error) {
	var (
		out     []Edit
		partial []string
		seen    = map[string]int{}
	)
	add := func(p, op string) {
		if i, ok := seen[p]; ok {
			if op == OpDelete {
				out[i].Op = OpDelete
			}
			return
		}
		seen[p] = len(out)
		out = append(out, Edit{Path: p, Op: op})
	}
	for _, c := range cmds {
		if p, dir, ok := shellPatch(c); ok {
			pe, err := patchEdits(p)
			if err != nil {
				partial = append(partial, err.Error())
			}
			for _, e := range pe {
				e.Path = joinDir(c.Dir, joinDir(dir, e.Path))
				if e.MoveTo != "" {
					e.MoveTo = joinDir(c.Dir, joinDir(dir, e.MoveTo))
				}
				if i, dup := seen[e.Path]; dup {
					out[i] = e
					continue
				}
				seen[e.Path] = len(out)
				out = append(out, e)
			}
			continue
		}
		var w shell.Writes
		switch {
		case shellScript(c.Argv) != "":
			w = shell.Analyze(shellScript(c.Argv))
		case c.Argv != nil:
			w = shell.AnalyzeArgv(c.Argv)
		default:
			w = shell.Analyze(c.Script)
		}
		removed := map[string]bool{}
		for _, r := range w.Removed {
			removed[r] = true
		}
		for _, t := range w.Targets {
			op := OpWrite
			if removed[t] {
				op = OpDelete
			}
			add(joinDir(c.Dir, t), op)
		}
		if w.Unparsed != "" {
			partial = append(partial, w.Unparsed)
		}
	}
	if len(partial) > 0 {
		return out, fmt.Errorf("%w: %s", ErrPartial, strings.Join(partial, "; "))
	}
	return out, nil
}

// shellPatch recognises apply_patch run as a command, as Codex does: the
// argument vector ["apply_patch", patch] (or "applypatch"), or a script
// "apply_patch <<'EOF'\n…\nEOF", possibly after "cd dir &&" (then dir is
// returned, relative to the command's directory).
func shellPatch(c policy.ShellCommand) (patch, dir string, ok bool) {
	if len(c.Argv) == 2 && (c.Argv[0] == "apply_patch" || c.Argv[0] == "applypatch") {
		return c.Argv[1], "", true
	}
	script := c.Script
	if sc := shellScript(c.Argv); sc != "" {
		script = sc
	}
	s := strings.TrimSpace(script)
	if rest, found := strings.CutPrefix(s, "cd "); found {
		d, after, and := strings.Cut(rest, "&&")
		if !and || strings.Contains(d, "\n") {
			return "", "", false
		}
		dir = strings.Trim(strings.TrimSpace(d), `"'`)
		s = strings.TrimSpace(after)
	}
	if !strings.HasPrefix(s, "apply_patch") && !strings.HasPrefix(s, "applypatch") {
		return "", "", false
	}
	nl := strings.IndexByte(s, '\n')
	if nl < 0 || !strings.Contains(s[:nl], "<<") {
		return "", "", false
	}
	body := s[nl+1:]
	if i := strings.Index(body, markEnd); i >= 0 {
		return body[:i+len(markEnd)], dir, true
	}
	return "", "", false
}

// shellScript returns the script of ["bash", "-lc", script] (any common
// shell, any short options with c), "" for another argument vector.
// Analysing the script itself sees through a multi-line script, which
// re-quoting the vector would hide.
func shellScript(argv []string) string {
	if len(argv) != 3 || !strings.HasPrefix(argv[1], "-") || strings.HasPrefix(argv[1], "--") || !strings.Contains(argv[1], "c") {
		return ""
	}
	switch path.Base(argv[0]) {
	case "sh", "bash", "zsh", "dash", "ksh", "ash":
		return argv[2]
	}
	return ""
}

func joinDir(dir, p string) string {
	if dir == "" || path.IsAbs(p) {
		return p
	}
	return path.Join(dir, p)
}
