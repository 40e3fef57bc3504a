package rewrite

import (
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

func TestOASpliceElems(t *testing.T) {
	tests := []struct {
		arr   string
		s, e  int
		items []string
		want  string
	}{
		{`[1, 2, 3]`, 0, 1, nil, `[2, 3]`},
		{`[1, 2, 3]`, 1, 2, nil, `[1, 3]`},
		{`[1, 2, 3]`, 2, 3, nil, `[1, 2]`},
		{`[1, 2, 3]`, 0, 3, nil, `[]`},
		{"[\n 1\n]", 0, 1, nil, "[\n \n]"},
		{`[1, 2, 3]`, 1, 2, []string{"7", "8"}, `[1, 7,8, 3]`},
		{`[1, 2, 3]`, 0, 0, []string{"0"}, `[0,1, 2, 3]`},
		{`[1, 2, 3]`, 3, 3, []string{"4"}, `[1, 2, 3,4]`},
		{`[1, 2, 3]`, 1, 1, []string{"x", "y"}, `[1, x,y,2, 3]`},
		{`[ ]`, 0, 0, []string{"1"}, `[1 ]`},
		{`[1]`, 1, 1, nil, `[1]`},
	}
	for _, tt := range tests {
		body := []byte(`{"a":` + tt.arr + `}`)
		root, _ := jsonkit.RootObject(jsonkit.UnsafeString(body))
		arr := root.Get("a")
		var items [][]byte
		for _, s := range tt.items {
			items = append(items, []byte(s))
		}
		got := OpenAISpliceElems(body, arr, BlocksElems(arr), tt.s, tt.e, items)
		require.Equal(t, `{"a":`+tt.want+`}`, string(got), "%s [%d,%d)", tt.arr, tt.s, tt.e)
	}
}

func TestOAReorderAndDelete(t *testing.T) {
	body := []byte("{\"a\": [\n  1,\n  2,\n  3\n], \"b\": 1, \"c\": 2}")
	root, _ := jsonkit.RootObject(jsonkit.UnsafeString(body))
	elems := BlocksElems(root.Get("a"))
	require.Equal(t, "{\"a\": [\n  3,\n  1\n], \"b\": 1, \"c\": 2}", string(OpenAIReorderElems(body, elems, []int{2, 0})))
	require.Equal(t, "{\"a\": [\n  \n], \"b\": 1, \"c\": 2}", string(OpenAIReorderElems(body, elems, nil)))
	for key, want := range map[string]string{
		"a": `{"b": 1, "c": 2}`,
		"b": "{\"a\": [\n  1,\n  2,\n  3\n], \"c\": 2}",
		"c": "{\"a\": [\n  1,\n  2,\n  3\n], \"b\": 1}",
		"x": string(body),
	} {
		require.Equal(t, want, string(OpenAIDeleteMember(body, root, key)), key)
	}
	one := []byte(`{ "a" : 1 }`)
	r1, _ := jsonkit.RootObject(jsonkit.UnsafeString(one))
	require.Equal(t, `{  }`, string(OpenAIDeleteMember(one, r1, "a")))
}

func TestOACallOrder(t *testing.T) {
	order, err := OpenAICallOrder(4, []int{1, 1}, []int{3, 2})
	require.NoError(t, err)
	require.Equal(t, []int{3, 2, 0}, order)
	order, err = OpenAICallOrder(2, []int{0, 1}, nil)
	require.NoError(t, err)
	require.Empty(t, order)
	for _, c := range []struct{ remove, first []int }{
		{[]int{2}, nil}, {nil, []int{-1}}, {[]int{0}, []int{0}}, {nil, []int{1, 1}},
	} {
		_, err := OpenAICallOrder(2, c.remove, c.first)
		require.Error(t, err, "%v %v", c.remove, c.first)
	}
}

func TestOAMergeText(t *testing.T) {
	tests := []struct{ a, b, want string }{
		{`"ab\n"`, `"c\u00e9"`, `"ab\nc\u00e9"`},
		{`null`, `"x"`, `"x"`},
		{`"x"`, `null`, ``},
		{`[{"type":"text","text":"a"}]`, `[{"type":"text","text":"b"}]`, `[{"type":"text","text":"a"},{"type":"text","text":"b"}]`},
		{`"a"`, `[{"type":"text","text":"b"}]`, `[{"type":"text","text":"a"},{"type":"text","text":"b"}]`},
		{`[]`, `"b"`, `[{"type":"text","text":"b"}]`},
	}
	for _, tt := range tests {
		a := gjson.Parse(tt.a)
		b := gjson.Parse(tt.b)
		got, err := OpenAIMergeText(a, b, "text")
		require.NoError(t, err)
		require.Equal(t, tt.want, string(got), "%s + %s", tt.a, tt.b)
	}
	_, err := OpenAIMergeText(gjson.Parse(`1`), gjson.Parse(`"b"`), "text")
	require.ErrorIs(t, err, ErrMalformedReply)
}
