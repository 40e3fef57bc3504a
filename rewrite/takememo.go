package rewrite

import (
	"sync"
)

// TakeMemo is a cache bounded in bytes whose entries are taken out, not
// read: a request takes the entry it builds on (then owns it, and may
// recycle its buffers) and puts the new one back, so two concurrent
// requests never share an entry. Least recently used entries go first when
// the budget is passed; an entry above a quarter of the budget is not
// kept. It backs the index memo and the turn engine's history memo.
//
// Every request takes and puts: the recency list's nodes are kept for
// reuse (a free list as long as the most entries held at once), so that a
// put allocates nothing once the memo has been as full as it gets.
//
// A nil *TakeMemo keeps nothing. It is safe for concurrent use.
type TakeMemo[K comparable, V any] struct {
	mu     sync.Mutex
	budget int64
	used   int64
	size   func(V) int64
	// head is the recency list's sentinel: head.next the most recently
	// put entry, head.prev the least.
	head  takeNode[K, V]
	free  *takeNode[K, V] // nodes for reuse, linked through next
	byKey map[K]*takeNode[K, V]
}

type takeNode[K comparable, V any] struct {
	prev, next *takeNode[K, V]
	k          K
	v          V
}

// NewTakeMemo returns a memo of up to budget bytes, size giving an entry's
// bytes; nil when budget <= 0.
func NewTakeMemo[K comparable, V any](budget int64, size func(V) int64) *TakeMemo[K, V] {
	if budget <= 0 {
		return nil
	}
	m := &TakeMemo[K, V]{budget: budget, size: size, byKey: map[K]*takeNode[K, V]{}}
	m.head.prev, m.head.next = &m.head, &m.head
	return m
}

// Take removes k's entry and returns it (false: none).
func (m *TakeMemo[K, V]) Take(k K) (V, bool) {
	var zero V
	if m == nil {
		return zero, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.byKey[k]
	if n == nil {
		return zero, false
	}
	return m.remove(n), true
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
	if n := m.byKey[k]; n != nil {
		m.remove(n)
	}
	if size > m.budget/4 {
		return
	}
	n := m.free
	if n != nil {
		m.free = n.next
	} else {
		n = new(takeNode[K, V])
	}
	n.k, n.v = k, v
	n.prev, n.next = &m.head, m.head.next
	n.next.prev = n
	m.head.next = n
	m.byKey[k] = n
	m.used += size
	for m.used > m.budget {
		m.remove(m.head.prev)
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

// remove unlinks n, returns its value and keeps the node for reuse
// (holding neither its key nor its value).
func (m *TakeMemo[K, V]) remove(n *takeNode[K, V]) V {
	v := n.v
	m.used -= m.size(v)
	n.prev.next, n.next.prev = n.next, n.prev
	delete(m.byKey, n.k)
	var zk K
	var zv V
	n.k, n.v, n.prev = zk, zv, nil
	n.next, m.free = m.free, n
	return v
}
