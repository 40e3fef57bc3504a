package agents

import (
	"bytes"
	"fmt"

	"github.com/tidwall/gjson"
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

// toolNames lists the tools a model request declares, for failure messages.
func toolNames(body []byte) []string {
	var out []string
	for _, p := range []string{"tools.#.name", "tools.#.function.name", "tools.#.functionDeclarations.#.name"} {
		gjson.GetBytes(body, p).ForEach(func(_, v gjson.Result) bool {
			if v.IsArray() {
				for _, n := range v.Array() {
					out = append(out, n.String())
				}
			} else {
				out = append(out, v.String())
			}
			return true
		})
	}
	return out
}

func indexByte(b []byte, c byte) int { return bytes.IndexByte(b, c) }
