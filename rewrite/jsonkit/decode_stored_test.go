package jsonkit

import (
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHasElements(t *testing.T) {
	for v, want := range map[string]bool{`[1]`: true, `[ {"a":1} ]`: true, `[]`: false, `[ ]`: false, `null`: false, `{}`: false, ``: false} {
		assert.Equal(t, want, HasElements(v), "%q", v)
	}
}

// A stored array decodes element by element where the decoder takes it,
// with encoding/json where it does not (here: a number where the decoder
// wants strings is refused by both; a key in another case only by the
// element decoder), and fails as encoding/json fails.
func TestDecodeStoredArray(t *testing.T) {
	type item struct {
		Name string `json:"name"`
	}
	one := func(v string, e *item) bool {
		_, ok := DecodeObject(v, []string{"name"}, func(key, v string) bool {
			return key != "name" || DecodeString(v, &e.Name)
		})
		return ok
	}
	got, err := DecodeStoredArray(`[{"name":"a"},null,{"name":"b"}]`, one)
	require.NoError(t, err)
	assert.Equal(t, []item{{"a"}, {}, {"b"}}, got)
	got, err = DecodeStoredArray(`[{"NAME":"folded"}]`, one)
	require.NoError(t, err, "encoding/json reads what the element decoder leaves")
	assert.Equal(t, []item{{"folded"}}, got)
	_, err = DecodeStoredArray(`[{"name":7}]`, one)
	assert.Error(t, err)
}

// TakeStored decodes the stored list into the list and empties it; a list
// not stored, or one that cannot be read, is left as it is.
func TestTakeStored(t *testing.T) {
	one := func(v string, e *string) bool { return DecodeString(v, e) }
	stored, list := "", []string{"kept"}
	require.NoError(t, TakeStored(&stored, &list, one))
	assert.Equal(t, []string{"kept"}, list, "nothing stored: nothing taken")

	stored = `["a","b"]`
	require.NoError(t, TakeStored(&stored, &list, one))
	assert.Equal(t, []string{"a", "b"}, list)
	assert.Empty(t, stored)

	stored = `[7]`
	require.Error(t, TakeStored(&stored, &list, one))
	assert.Equal(t, `[7]`, stored, "unreadable: left as stored")
	assert.Equal(t, []string{"a", "b"}, list)
}

func TestDecodeDocument(t *testing.T) {
	var keys []string
	ok := DecodeDocument([]byte(` {"a":1,"b":[2]} `), []string{"a", "b"}, func(key, _ string) bool { keys = append(keys, key); return true })
	assert.True(t, ok)
	assert.Equal(t, []string{"a", "b"}, keys)
	for _, bad := range []string{`[1]`, `{"a":`, `{"a":1,"a":2}`, `"x"`} {
		assert.False(t, DecodeDocument([]byte(bad), []string{"a"}, func(string, string) bool { return true }), bad)
	}
}

// A stored array keeps its last keep elements (all when keep < 0) and
// gains the new ones after them; an error from the writer is returned.
func TestAppendStoredArray(t *testing.T) {
	num := func(dst []byte, i int) ([]byte, error) { return strconv.AppendInt(dst, int64(10+i), 10), nil }
	for _, tc := range []struct {
		raw     string
		keep, n int
		want    string
	}{
		{`[1,{"a":[2]},3]`, -1, 2, `[1,{"a":[2]},3,10,11]`},
		{`[1,2,3]`, 2, 1, `[2,3,10]`},
		{`[1,2,3]`, 5, 1, `[1,2,3,10]`},
		{`[1,2,3]`, 0, 2, `[10,11]`},
		{`[]`, -1, 1, `[10]`},
		{`[ 1 ]`, 1, 0, `[1]`},
	} {
		got, err := AppendStoredArray(tc.raw, tc.keep, tc.n, num)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%s keep %d", tc.raw, tc.keep)
		assert.True(t, Valid([]byte(got)), got)
	}
	boom := errors.New("boom")
	_, err := AppendStoredArray(`[1]`, -1, 1, func([]byte, int) ([]byte, error) { return nil, boom })
	assert.ErrorIs(t, err, boom)
}
