package turn

import "sync"

// userTextMemo remembers what user_text ledger records decode to. A
// session replays every user_text entry of its ledger on every request
// (one per earlier turn, each the same bytes as the last time), so a long
// session decoded the same records again and again (pprof, the history
// benchmark at 50 KB with the features on: 5 % of the CPU). Keyed by the
// record's bytes (a map lookup hashes them; decoding validated and parsed
// them), so a hit is always what decoding gives. Bounded by
// maxUserTextMemo records and maxUserTextMemoBytes of keys; past either it
// starts over. Safe for concurrent use; the texts returned are shared and
// must not be changed.
type userTextMemo struct {
	mu    sync.RWMutex
	texts map[string][]string
	bytes int
}

const (
	maxUserTextMemo      = 4096
	maxUserTextMemoBytes = 4 << 20
)

// decode is decodeUserText(data), remembered.
func (m *userTextMemo) decode(data []byte) ([]string, error) {
	m.mu.RLock()
	texts, ok := m.texts[string(data)]
	m.mu.RUnlock()
	if ok {
		return texts, nil
	}
	texts, err := decodeUserText(data)
	if err != nil || len(data) > maxUserTextMemoBytes/64 {
		return texts, err
	}
	m.mu.Lock()
	if m.texts == nil || len(m.texts) >= maxUserTextMemo || m.bytes+len(data) > maxUserTextMemoBytes {
		m.texts, m.bytes = make(map[string][]string), 0
	}
	m.texts[string(data)] = texts
	m.bytes += len(data)
	m.mu.Unlock()
	return texts, nil
}

// userTexts is the process's memo (records are the same bytes whichever
// engine or session replays them).
var userTexts userTextMemo
