package rewrite

import (
	"crypto/sha256"
	"hash"
	"hash/maphash"
	"sync"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// promptStates memoizes a fingerprint's hash state after its system prompt.
// Agents resend the same prompt with every request (Claude Code's is about
// 10 KB), and hashing it with SHA-256 was 8 % of the CPU of a 50 KB
// request with the default features. An entry is used only when its prompt
// is byte for byte the one asked for (the map key is a fast hash of it,
// never trusted alone), and what it holds is the state the prompt leads
// to, cloned for each use: the fingerprints are exactly those of hashing
// the prompt every time.
type promptStates struct {
	seed maphash.Seed
	key  func(maphash.Seed, string) uint64 // maphash.String; tests force collisions
	max  int

	mu    sync.Mutex
	byKey map[uint64]promptState
	order []uint64 // insertion order, for eviction beyond max
}

type promptState struct {
	prompt string // owned copy
	state  hash.Cloner
}

// promptStateMax bounds the prompts kept: the distinct system prompts in
// use (agent kinds and their versions, an SDK app's few), not sessions.
const promptStateMax = 64

// promptStateMin is the shortest prompt worth an entry: below it hashing
// is cheaper than the copy and the comparison.
const promptStateMin = 1 << 10

var fingerprintPrompts = newPromptStates(promptStateMax, maphash.String)

func newPromptStates(max int, key func(maphash.Seed, string) uint64) *promptStates {
	return &promptStates{seed: maphash.MakeSeed(), key: key, max: max, byKey: make(map[uint64]promptState)}
}

// after returns a hash that has been written the fingerprint's preamble
// and system, ready for the rest; the caller owns it.
func (p *promptStates) after(system string) hash.Hash {
	if len(system) < promptStateMin {
		return startFingerprint(system)
	}
	k := p.key(p.seed, system)
	p.mu.Lock()
	e, ok := p.byKey[k]
	p.mu.Unlock()
	if ok && e.prompt == system {
		if h, err := e.state.Clone(); err == nil {
			return h
		}
	}
	h := startFingerprint(system)
	c, ok := h.(hash.Cloner)
	if !ok {
		return h
	}
	saved, err := c.Clone()
	if err != nil {
		return h
	}
	p.mu.Lock()
	if _, exists := p.byKey[k]; !exists {
		p.order = append(p.order, k)
		if len(p.order) > p.max {
			delete(p.byKey, p.order[0])
			p.order = p.order[1:]
		}
	}
	p.byKey[k] = promptState{prompt: string([]byte(system)), state: saved}
	p.mu.Unlock()
	return h
}

// startFingerprint hashes the fingerprint's preamble and system prompt.
func startFingerprint(system string) hash.Hash {
	h := sha256.New()
	h.Write([]byte("shepherd-conversation\x00"))
	// Hashed in place: converting it to []byte would copy (it is often
	// kilobytes) for a hash that only reads.
	h.Write(jsonkit.UnsafeBytes(system))
	h.Write([]byte{0})
	return h
}
