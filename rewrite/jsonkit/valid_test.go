package jsonkit

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/workload"
)

var validCases = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e+10`, `-12.25E-3`, `true`, `false`, `null`,
	` {"a" : [1, 2, {"b": null}], "c": "x\"y\\z\/\b\f\n\r\t\u00e9\uD83D\uDE00"} `,
	`"` + strings.Repeat("plain text of some length, ", 20) + `"`,
	`"ünïcödé and invalid \xff utf-8"`, "\"tab\\tok\"",
	// invalid
	``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a"}`, `{a:1}`, `01`, `1.`, `.5`, `1e`, `-`, `+1`,
	`"unterminated`, "\"raw\ttab\"", "\"nl\n\"", `"bad \x escape"`, `"\u12"`, `"\u12g4"`,
	`tru`, `nul`, `[1 2]`, `{"a":1 "b":2}`, `1 2`, `"a" "b"`, `[` + strings.Repeat("[", 10001) + strings.Repeat("]", 10002),
	"\"ctl \x01\"", "\"\x1f\"", `"ends with backslash\`,
}

func TestValidJSONMatchesEncodingJSON(t *testing.T) {
	for _, c := range validCases {
		require.Equal(t, json.Valid([]byte(c)), Valid([]byte(c)), "%.80q", c)
	}
	// Every special byte at every offset of an 8-byte word.
	for off := range 16 {
		for _, sp := range []string{`"`, `\\`, "\x01", "\x1f", `\n`, "é"} {
			s := `"` + strings.Repeat("a", off) + sp + strings.Repeat("b", 9) + `"`
			require.Equal(t, json.Valid([]byte(s)), Valid([]byte(s)), "%q", s)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

func BenchmarkValidJSON(b *testing.B) {
	for name, body := range map[string][]byte{"code": bigBody(), "agent50k": workload.AnthropicAgent(workload.AgentTurns, false)} {
		b.Run(name+"/validJSON", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if !Valid(body) {
					b.Fatal("invalid")
				}
			}
		})
		b.Run(name+"/gjson", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if !gjson.ValidBytes(body) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// bigBody is an agent-shaped 50 KB request: long strings with escapes.
func bigBody() []byte {
	var sb strings.Builder
	sb.WriteString(`{"model":"m","max_tokens":1024,"messages":[`)
	for i := range 60 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"`)
		sb.WriteString(strings.Repeat(`func main() {\n\tfmt.Println(\"hello, world\")\n}\n`, 16))
		sb.WriteString(`"}]}`)
	}
	sb.WriteString(`]}`)
	return []byte(sb.String())
}

// Nesting is read without recursion (validator.scan): deep values, past
// the levels kept in bits and up to encoding/json's limit of 10000, are
// judged as encoding/json judges them, arrays and objects mixed.
func TestValidDeepNesting(t *testing.T) {
	nest := func(levels int, broken bool) []byte {
		var open, close strings.Builder
		for i := range levels {
			if i%3 == 1 {
				open.WriteString(`{"k":`)
			} else {
				open.WriteString(`[1,`)
			}
		}
		for i := levels - 1; i >= 0; i-- {
			if i%3 == 1 {
				close.WriteString(`}`)
			} else {
				close.WriteString(`]`)
			}
		}
		c := close.String()
		if broken { // one closing byte of the wrong kind, deep inside
			c = strings.Replace(c, "}]", "]]", 1)
		}
		return []byte(open.String() + `"x"` + c)
	}
	for _, levels := range []int{1, 2, 3, 255, 256, 257, 300, 9999, 10000, 10001} {
		for _, broken := range []bool{false, true} {
			b := nest(levels, broken)
			require.Equal(t, json.Valid(b), Valid(b), "levels %d, broken %v", levels, broken)
			_, ok := ValidIndexed(b)
			require.Equal(t, json.Valid(b), ok, "ValidIndexed: levels %d, broken %v", levels, broken)
		}
	}
	require.True(t, Valid(nest(10000, false)))
	require.False(t, Valid(nest(10001, false)))
	require.False(t, Valid(nest(300, true)))
}
