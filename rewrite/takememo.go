package rewrite

import (
	"container/list"
	"sync"
)

// TakeMemo is a cache bounded in bytes whose entries are taken out, not
// read: a request takes the entry it builds on (then owns it, and may
// recycle its buffers) and puts the new one back, so two concurrent
// requests never share an entry. Least recently used entries go first when
// the budget is passed; an entry above a quarter of the budget is not
// kept. It backs the index memo and the turn engine's history memo.
//
// A nil *TakeMemo keeps nothing. It is safe for concurrent use.
type TakeMemo[K comparable, V any] struct {
	mu     sync.Mutex
	budget int64
	used   int64
	size   func(V) int64
	lru    *list.List // of *takeEntry[K, V], most recent first
	byKey  map[K]*list.Element
}

type takeEntry[K comparable, V any] struct {
	k K
	v V
}

// NewTakeMemo returns a memo of up to budget bytes, size giving an entry's
// bytes; nil when budget <= 0.
func NewTakeMemo[K comparable, V any](budget int64, size func(V) int64) *TakeMemo[K, V] {
	if budget <= 0 {
		return nil
	}
	return &TakeMemo[K, V]{budget: budget, size: size, lru: list.New(), byKey: map[K]*list.Element{}}
}

// Take removes k's entry and returns it (false: none).
func (m *TakeMemo[K, V]) Take(k K) (V, bool) {
	var zero V
	if m == nil {
		return zero, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	el := m.byKey[k]
	if el == nil {
		return zero, false
	}
	m.remove(el)
	return el.Value.(*takeEntry[K, V]).v, true
}

// Put makes v k's entry (replacing one a concurrent request put), then
// evicts the least recently used entries beyond the budget.
func (m *TakeMemo[K, V]) Put(k K, v V) {
	if m == nil {
		return
	}
	size := m.size(v)
	m.mu.Lock()
	defer m.mu.Unlock()
	if el := m.byKey[k]; el != nil {
		m.remove(el)
	}
	if size > m.budget/4 {
		return
	}
	m.byKey[k] = m.lru.PushFront(&takeEntry[K, V]{k: k, v: v})
	m.used += size
	for m.used > m.budget {
		m.remove(m.lru.Back())
	}
}

// Len is the number of entries kept.
func (m *TakeMemo[K, V]) Len() int {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byKey)
}

// Used is the bytes kept, within Budget.
func (m *TakeMemo[K, V]) Used() (used, budget int64) {
	if m == nil {
		return 0, 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used, m.budget
}

func (m *TakeMemo[K, V]) remove(el *list.Element) {
	e := el.Value.(*takeEntry[K, V])
	m.used -= m.size(e.v)
	m.lru.Remove(el)
	delete(m.byKey, e.k)
}
