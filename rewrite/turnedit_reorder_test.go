package rewrite_test

import (
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
	"github.com/stretchr/testify/require"
)

func TestAgReorder(t *testing.T) {
	body := []byte("[ 1,\n  2 , 3,4 ]")
	arr, _ := apitest.RootArray(body)
	elems := rewrite.BlocksElems(arr)
	for _, tt := range []struct {
		order []int
		want  string
	}{
		{[]int{0, 1, 2, 3}, "[ 1,\n  2 , 3,4 ]"},
		{[]int{0, 2, 3}, "[ 1,\n  3 , 4 ]"},
		{[]int{3, 2, 1, 0}, "[ 4,\n  3 , 2,1 ]"},
		{[]int{1}, "[ 2 ]"},
		{nil, "[  ]"},
	} {
		out := rewrite.BlocksReorder(body, elems, tt.order)
		require.Equal(t, tt.want, string(out), tt.order)
	}
	require.Equal(t, "[ 1,\n  2 , 3,4 ]", string(body))
}
