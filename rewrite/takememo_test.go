package rewrite

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newSizedMemo(budget int64) *TakeMemo[string, []byte] {
	return NewTakeMemo[string](budget, func(v []byte) int64 { return int64(len(v)) })
}

// An entry is taken once; a put replaces the key's entry; the least
// recently put entries go first past the budget, and an entry above a
// quarter of it is not kept.
func TestTakeMemo(t *testing.T) {
	m := newSizedMemo(100)
	m.Put("a", make([]byte, 20))
	m.Put("b", make([]byte, 20))
	v, ok := m.Take("a")
	require.True(t, ok)
	assert.Len(t, v, 20)
	_, ok = m.Take("a")
	assert.False(t, ok, "taken once")
	assert.Equal(t, 1, m.Len())

	m.Put("b", make([]byte, 10)) // replaces b
	used, budget := m.Used()
	assert.Equal(t, int64(10), used)
	assert.Equal(t, int64(100), budget)

	m.Put("big", make([]byte, 26))
	assert.Equal(t, 1, m.Len(), "above a quarter of the budget: not kept")
	_, ok = m.Take("big")
	assert.False(t, ok)

	// b (10), then c, d, e, f of 25 each: 110 > 100, so b goes first, the
	// least recently put.
	for _, k := range []string{"c", "d", "e"} {
		m.Put(k, make([]byte, 25))
	}
	m.Put("b", make([]byte, 10)) // b is now the most recent
	m.Put("f", make([]byte, 25)) // 110: c, the oldest, goes
	_, ok = m.Take("c")
	assert.False(t, ok, "the least recently put entry was evicted")
	for _, k := range []string{"b", "d", "e", "f"} {
		_, ok := m.Take(k)
		assert.True(t, ok, k)
	}
	assert.Equal(t, 0, m.Len())
	used, _ = m.Used()
	assert.Equal(t, int64(0), used)
}

// Once the memo has held its most entries, taking and putting back
// allocates nothing.
func TestTakeMemoReusesNodes(t *testing.T) {
	m := newSizedMemo(1000)
	v := make([]byte, 10)
	keys := []string{"a", "b", "c"}
	for _, k := range keys {
		m.Put(k, v)
	}
	allocs := testing.AllocsPerRun(100, func() {
		for _, k := range keys {
			got, _ := m.Take(k)
			m.Put(k, got)
		}
	})
	assert.Zero(t, allocs)
	assert.Equal(t, 3, m.Len())
}

// A nil memo keeps nothing.
func TestTakeMemoNil(t *testing.T) {
	var m *TakeMemo[string, []byte]
	assert.Nil(t, newSizedMemo(0))
	m.Put("a", []byte("x"))
	_, ok := m.Take("a")
	assert.False(t, ok)
	assert.Zero(t, m.Len())
}
