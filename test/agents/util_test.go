package agents

import (
	"bytes"
	"fmt"
)

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) > 0 {
			out = append(out, l)
		}
	}
	return out
}

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
