package policy

import (
	"errors"
	"fmt"
	"strings"
)

// PatchPaths extracts every file path a patch touches, in order of first
// appearance and de-duplicated. It understands the apply_patch format of
// Codex CLI:
//
//	*** Begin Patch
//	*** Add File: path/a.go        (followed by + lines)
//	*** Update File: path/b.go     (optionally "*** Move to: new/path.go", then @@ hunks)
//	*** Delete File: path/c.go
//	*** End Patch
//
// (header lines may be indented, as apply_patch tolerates) and plain unified
// / git diffs: a "--- a/x" line immediately followed by a "+++ b/x" line
// names x (the a/ and b/ prefixes are stripped, /dev/null and a trailing
// tab-separated timestamp are ignored), as do "rename from/to", "copy
// from/to" and unambiguous "diff --git a/x b/y" lines.
//
// Extraction errs on the side of reporting too much: content lines that look
// like headers are reported too. Every returned path is a non-empty,
// whitespace-trimmed substring of patch. It is an error when the patch has no
// recognisable file header, when a header names an empty path, or when a
// path is quoted (git's C-style quoting is not decoded, so the path could not
// be checked). PatchPaths runs in linear time and never panics.
func PatchPaths(patch string) ([]string, error) {
	var (
		out     []string
		seen    = map[string]bool{}
		headers int
	)
	addPath := func(lineNo int, p string) error {
		p = strings.TrimSpace(p)
		if p == "" {
			return fmt.Errorf("patch line %d: file header with an empty path", lineNo)
		}
		if strings.HasPrefix(p, `"`) {
			return fmt.Errorf("patch line %d: quoted path %s is not supported", lineNo, p)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
		return nil
	}

	rest := patch
	var prevMinus string // path of the previous line when it was "--- x", else ""
	havePrevMinus := false
	for lineNo := 1; rest != ""; lineNo++ {
		var line string
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			line, rest = rest, ""
		}
		line = strings.TrimSuffix(line, "\r")

		wasMinus, minusPath := havePrevMinus, prevMinus
		havePrevMinus = false

		// apply_patch headers.
		if t := strings.TrimLeft(line, " \t"); strings.HasPrefix(t, "*** ") {
			for _, prefix := range [...]string{"*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:"} {
				if strings.HasPrefix(t, prefix) {
					headers++
					if err := addPath(lineNo, t[len(prefix):]); err != nil {
						return nil, err
					}
					break
				}
			}
			continue
		}

		// Unified diff headers: "--- old" immediately followed by "+++ new".
		switch {
		case strings.HasPrefix(line, "--- "):
			havePrevMinus = true
			prevMinus = diffPath(line[4:], "a/")
		case strings.HasPrefix(line, "+++ ") && wasMinus:
			headers++
			for _, p := range [...]string{minusPath, diffPath(line[4:], "b/")} {
				if p == "/dev/null" {
					continue
				}
				if err := addPath(lineNo, p); err != nil {
					return nil, err
				}
			}
		case strings.HasPrefix(line, "rename from "), strings.HasPrefix(line, "copy from "):
			headers++
			if err := addPath(lineNo, line[strings.Index(line, " from ")+6:]); err != nil {
				return nil, err
			}
		case strings.HasPrefix(line, "rename to "), strings.HasPrefix(line, "copy to "):
			headers++
			if err := addPath(lineNo, line[strings.Index(line, " to ")+4:]); err != nil {
				return nil, err
			}
		case strings.HasPrefix(line, "diff --git "):
			a, b, err := gitDiffPaths(line[len("diff --git "):])
			if err != nil {
				return nil, fmt.Errorf("patch line %d: %w", lineNo, err)
			}
			headers++
			for _, p := range [...]string{a, b} {
				if p == "/dev/null" {
					continue
				}
				if err := addPath(lineNo, p); err != nil {
					return nil, err
				}
			}
		}
	}
	if headers == 0 {
		return nil, errors.New("patch has no recognisable file header (want *** Add/Update/Delete File: or ---/+++ lines)")
	}
	if len(out) == 0 {
		return nil, errors.New("patch names no file")
	}
	return out, nil
}

// diffPath extracts the path of a ---/+++ header's remainder: a trailing
// tab-separated timestamp is dropped and the given git prefix stripped.
func diffPath(s, prefix string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	return strings.TrimPrefix(s, prefix)
}

// gitDiffPaths splits the remainder of a "diff --git " line, "a/X b/Y", into
// X and Y. It fails when the split is ambiguous or the paths are quoted.
func gitDiffPaths(s string) (string, string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, `"`) || strings.HasSuffix(s, `"`) {
		return "", "", fmt.Errorf("quoted path in %q is not supported", s)
	}
	if !strings.HasPrefix(s, "a/") {
		return "", "", fmt.Errorf("cannot parse diff --git header %q", s)
	}
	if n := strings.Count(s, " b/"); n == 1 {
		i := strings.Index(s, " b/")
		return s[2:i], s[i+3:], nil
	}
	// Several " b/": accept only the unambiguous "a/X b/X".
	if len(s) >= 5 && (len(s)-5)%2 == 0 {
		l := (len(s) - 5) / 2
		x := s[2 : 2+l]
		if s[2+l:5+l] == " b/" && s[5+l:] == x {
			return x, x, nil
		}
	}
	return "", "", fmt.Errorf("cannot parse diff --git header %q", s)
}
