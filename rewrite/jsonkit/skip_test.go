package jsonkit

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// checkIteration holds EachElement and Members to gjson's own iteration on a
// valid document: the same elements and members, with the same raw text,
// type, decoded value and document offset.
func checkIteration(t *testing.T, doc string) {
	t.Helper()
	if !Valid([]byte(doc)) {
		// Outside the contract: only no panic and no endless loop.
		r := gjson.Parse(doc)
		EachElement(r, func(int, gjson.Result) bool { return true })
		var out [2]gjson.Result
		Members(r, []string{"a", ""}, out[:])
		Member(r, "a")
		NestedMember(r, "a", "b")
		var lead [2]string
		LeadingElements(doc, "a", len(doc), lead[:])
		return
	}
	checkLeadingElements(t, doc)
	var walk func(r gjson.Result)
	walk = func(r gjson.Result) {
		if r.Type == gjson.Number {
			// Num reads from Raw what gjson parsed; ValueAtRaw leaves it.
			require.Equal(t, r.Num, Num(r), "number %s", r.Raw)
			raw := ValueAtRaw(r.Raw, 0, r.Index)
			require.Equal(t, r.Num, Num(raw), "number %s", r.Raw)
			require.Equal(t, r.Index, raw.Index)
		}
		if r.Exists() && r.Raw != "" {
			// ValueAtRaw is ValueAt but for a number's Num.
			want, got := ValueAt(r.Raw, 0, r.Index), ValueAtRaw(r.Raw, 0, r.Index)
			want.Num = 0
			requireSameResult(t, want, got)
		}
		if r.IsArray() || r.IsObject() {
			last := -1
			r.ForEach(func(_, v gjson.Result) bool { last = v.Index + len(v.Raw); return true })
			require.Equal(t, last, LastValueEnd(r), "end of the last value of %s", r.Raw)
		}
		switch {
		case r.IsArray():
			var want []gjson.Result
			r.ForEach(func(_, v gjson.Result) bool { want = append(want, v); return true })
			var got []gjson.Result
			EachElement(r, func(i int, v gjson.Result) bool {
				require.Equal(t, len(got), i)
				got = append(got, v)
				return true
			})
			require.Len(t, got, len(want), "elements of %s", r.Raw)
			require.Empty(t, MemberRaw(r.Raw, "a"), "an array has no members")
			// ElementsOf collects them, after what dst holds; FirstElement
			// is gjson's Get("0") (an empty array has none).
			collected := ElementsOf([]gjson.Result{{}}, r)
			require.Len(t, collected, len(want)+1, "ElementsOf of %s", r.Raw)
			if first := r.Get("0"); first.Exists() {
				requireSameResult(t, first, FirstElement(r))
			} else { // gjson gives an empty array's missing element an offset
				require.False(t, FirstElement(r).Exists())
			}
			for i := range want {
				requireSameResult(t, want[i], got[i])
				requireSameResult(t, want[i], collected[i+1])
				walk(got[i])
			}
		case r.IsObject():
			var keys []string
			var want []gjson.Result
			seen := map[string]bool{}
			r.ForEach(func(k, v gjson.Result) bool {
				if !seen[k.Str] {
					seen[k.Str] = true
					keys = append(keys, k.Str)
					want = append(want, v)
				}
				return true
			})
			keys = append(keys, "\x00absent")
			got := make([]gjson.Result, len(keys))
			Members(r, keys, got)
			for i := range want {
				requireSameResult(t, want[i], got[i])
				requireSameResult(t, want[i], Member(r, keys[i]))
				require.Equal(t, want[i].Raw, MemberRaw(r.Raw, keys[i]))
				walk(got[i])
			}
			require.False(t, got[len(keys)-1].Exists())
			require.False(t, Member(r, "\x00absent").Exists())
			require.Empty(t, MemberRaw(r.Raw, "\x00absent"))
			// NestedMember is Member of Member, for every pair of keys
			// (and absent ones).
			for _, outer := range keys {
				v := Member(r, outer)
				inner := []string{"\x00absent"}
				if v.IsObject() {
					v.ForEach(func(k, _ gjson.Result) bool { inner = append(inner, k.Str); return true })
				}
				for _, in := range inner {
					requireSameResult(t, Member(v, in), NestedMember(r, outer, in))
				}
			}
		}
	}
	walk(gjson.Parse(doc))
}

func requireSameResult(t *testing.T, want, got gjson.Result) {
	t.Helper()
	require.Equal(t, want.Raw, got.Raw)
	require.Equal(t, want.Type, got.Type, "type of %s", want.Raw)
	require.Equal(t, want.Index, got.Index, "offset of %s", want.Raw)
	require.Equal(t, want.Str, got.Str)
	require.Equal(t, want.Num, got.Num)
}

var iterationSeeds = []string{
	`[]`, `{}`, ` [ 1 , "a" , true , null , -2.5e3 , [ ] , { } ] `,
	`{"a":1,"a":2,"b":"x\"y","c":{"d":[1,{"e":"\\"}]}}`,
	`{"k\u00e9y":"v","\"q\"":[ "\\\\", "]" , "}" ],"n":null}`,
	`[{"role":"user","content":[{"type":"tool_result","content":"a \"quoted\" ] } string\\"}]}]`,
	`[0, -0, 1e3, 1E-2, 9007199254740993, -9007199254740993, -12, 0.5, 123456789012345678901, 2.0]`,
	`[1`, `{"a":`, `{"a" 1}`, `["\"]`, `[1,,2]`, `{"a":1,}`, `[tru]`, `"\\"`,
}

func TestIterationMatchesGJSON(t *testing.T) {
	for _, s := range iterationSeeds {
		checkIteration(t, s)
	}
	for _, b := range codecRequestFixtures(t) {
		checkIteration(t, string(b))
	}
}

// codecRequestFixtures returns the request.json fixture of every codec
// package under rewrite/ (one per wire API).
func codecRequestFixtures(t *testing.T) [][]byte {
	t.Helper()
	var out [][]byte
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "request.json" || filepath.Base(filepath.Dir(p)) == "jsonkit" {
			return err
		}
		b, err := os.ReadFile(p)
		out = append(out, b)
		return err
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(out), 4, "one request fixture per wire API")
	return out
}

func FuzzIteration(f *testing.F) {
	for _, s := range iterationSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) { checkIteration(t, doc) })
}

// FuzzStringValue: for any string, the literal encoding/json writes for it
// (and the one AppendString writes) decodes by StringValue to what
// encoding/json and gjson decode it to; ValueAt gives gjson's result.
func FuzzStringValue(f *testing.F) {
	for _, s := range []string{"", "plain", "a\nb\t\"q\"\\", "é\u2028<&>", "\x00\x1f", "😀 \xed\xa0\xbd", "\xff\xfe"} {
		f.Add(s)
	}
	f.Add(`\ud83d\ude00 \ud800 \u00e9 \/`)
	f.Fuzz(func(t *testing.T, s string) {
		for _, lit := range [][]byte{mustMarshal(t, s), AppendString(nil, s)} {
			var want string
			if err := json.Unmarshal(lit, &want); err != nil {
				t.Fatalf("%q: %v", lit, err)
			}
			if got := StringValue(string(lit)); got != want {
				t.Fatalf("%q: StringValue %q, encoding/json %q", lit, got, want)
			}
			g, v := gjson.ParseBytes(lit), ValueAt(string(lit), 0, 0)
			if v.Type != g.Type || v.Raw != g.Raw || v.Str != g.Str || v.Index != g.Index {
				t.Fatalf("%q: ValueAt %#v, gjson %#v", lit, v, g)
			}
		}
		// s read as the content of a literal: where encoding/json accepts
		// it, StringValue agrees.
		lit := `"` + s + `"`
		var want string
		if json.Unmarshal([]byte(lit), &want) == nil && utf8.ValidString(s) {
			if got := StringValue(lit); got != want {
				t.Fatalf("%q: StringValue %q, encoding/json %q", lit, got, want)
			}
		}
	})
}

func mustMarshal(t *testing.T, s string) []byte {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMembersRaw: the same members as Members, strings not decoded.
func TestMembersRaw(t *testing.T) {
	obj := gjson.Parse(`{"a":"x\ny","b":[1],"c":3,"a":"dup"}`)
	keys := []string{"a", "b", "c", "d"}
	var dec, raw [4]gjson.Result
	Members(obj, keys, dec[:])
	MembersRaw(obj, keys, raw[:])
	for i := range keys {
		require.Equal(t, dec[i].Raw, raw[i].Raw, keys[i])
		require.Equal(t, dec[i].Type, raw[i].Type, keys[i])
		require.Equal(t, dec[i].Index, raw[i].Index, keys[i])
	}
	require.Equal(t, "x\ny", dec[0].Str)
	require.Empty(t, raw[0].Str)
	require.False(t, raw[3].Exists())
}

// checkLeadingElements holds LeadingElements to gjson on a valid document:
// the first elements of the root member "a" (the first one when it
// repeats), and whether more follow.
func checkLeadingElements(t *testing.T, doc string) {
	t.Helper()
	var lead [2]string
	n, more := LeadingElements(doc, "a", len(doc), lead[:])
	r := gjson.Parse(doc)
	var a gjson.Result
	if r.IsObject() {
		var out [1]gjson.Result
		Members(r, []string{"a"}, out[:])
		a = out[0]
	}
	var want []string
	if a.IsArray() {
		a.ForEach(func(_, v gjson.Result) bool { want = append(want, v.Raw); return true })
	}
	require.Equal(t, min(len(want), 2), n, "leading elements of %s", doc)
	require.Equal(t, len(want) > 2, more, "more elements in %s", doc)
	for i := range n {
		require.Equal(t, want[i], lead[i])
	}
}

// TestLeadingElements: the conversation's first elements, wherever it lies.
func TestLeadingElements(t *testing.T) {
	for _, doc := range []string{
		`{"a":[1,{"x":[2]},3]}`, `{"m":"x","s":{"a":[9]},"a":[ "p" , "q" ]}`, `{"a":[]}`, `{"a":{}}`,
		`{"b":1}`, `[1]`, `{"a":[1]}`, `{"a":[1,2]}`, `{"a":[1,2,3],"a":[4]}`, ` { "a" : [ 1 , 2 , 3 ] } `,
	} {
		checkLeadingElements(t, doc)
	}
	var lead [2]string
	for within, want := range map[int]int{14: 0, 15: 0, 16: 2, 100: 2} {
		// The member before "a" ends at byte 15 (exclusive).
		if n, _ := LeadingElements(`{"m":"xxxxxxxx","a":[1,2]}`, "a", within, lead[:]); n != want {
			t.Fatalf("within %d: %d elements, want %d", within, n, want)
		}
	}
	if n, _ := LeadingElements(`{"a":[1,2]}`, "a", 5, lead[:]); n != 2 {
		t.Fatal("the conversation's own elements were bounded")
	}
}
