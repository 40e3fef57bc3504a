package agents

import (
	"bytes"
	"fmt"

	"github.com/shepherd-proxy/shepherd/test/kit"
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

// toolNames lists the tools a model request of any API declares, for
// failure messages and side requests.
func toolNames(body []byte) []string { return kit.AnyDeclaredTools(body) }

func indexByte(b []byte, c byte) int { return bytes.IndexByte(b, c) }
