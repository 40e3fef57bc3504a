package rewrite

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

func TestAgCallOrder(t *testing.T) {
	// Elements: 0 text, 1 call0, 2 text, 3 call1, 4 call2.
	calls := []int{1, 3, 4}
	for _, tt := range []struct {
		remove, first []int
		want          []int
		left          int
		err           string
	}{
		{nil, nil, []int{0, 1, 2, 3, 4}, 3, ""},
		{[]int{1}, nil, []int{0, 1, 2, 4}, 2, ""},
		{nil, []int{2}, []int{0, 4, 1, 2, 3}, 3, ""},
		{nil, []int{2, 1}, []int{0, 4, 3, 1, 2}, 3, ""},
		{[]int{0}, []int{2}, []int{0, 4, 2, 3}, 2, ""},
		{[]int{0, 1, 2}, nil, []int{0, 2}, 0, ""},
		{[]int{1, 1}, []int{1, 2, 2}, []int{0, 4, 1, 2}, 2, ""}, // duplicates; remove wins
		{[]int{3}, nil, nil, 0, "out of range"},
		{nil, []int{-1}, nil, 0, "out of range"},
	} {
		order, left, err := BlocksCallOrder(5, calls, tt.remove, tt.first)
		if tt.err != "" {
			require.ErrorContains(t, err, tt.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tt.want, order, "remove %v first %v", tt.remove, tt.first)
		require.Equal(t, tt.left, left)
	}
}

func TestAgJoinItems(t *testing.T) {
	out, err := agJoinItems([][]byte{[]byte(`{"a":1}`), []byte(` {"b":2} `)})
	require.NoError(t, err)
	require.Equal(t, `{"a":1}, {"b":2} `, string(out))
	_, err = agJoinItems([][]byte{[]byte(`{"a":`)})
	require.ErrorContains(t, err, "not valid JSON")
	_, err = agJoinItems([][]byte{[]byte(`[1]`)})
	require.ErrorContains(t, err, "not a JSON object")
	_, err = agJoinItems([][]byte{nil})
	require.Error(t, err)
	require.True(t, strings.HasPrefix(BlocksInner(gjson.Parse(`[ 1 , 2 ]`)), "1 , 2"))
	require.Equal(t, "", BlocksInner(gjson.Parse(`[ ]`)))
}
