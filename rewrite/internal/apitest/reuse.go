package apitest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shepherd-proxy/shepherd/rewrite"
)

// ReuseCase describes an API's long conversation for CheckReuse: Build
// renders a request body from raw JSON conversation elements (with a
// system prompt or other leading member long enough for the index memo to
// keep the body), and Pool lists elements to draw from (tool calls and
// their results, with the ids they share, text with escapes, arguments
// with numbers).
type ReuseCase struct {
	Build func(elems []string) []byte
	Pool  []string
}

// CheckReuse parses a conversation that changes step by step through one
// codec with a view cache (and so the index memo, which reuses the
// previous body's views and anchors for the elements the two bodies share
// byte for byte), and checks every step against a parse from scratch:
// the same view, the same anchors, the same error. Steps append elements,
// drop the last ones, replace an element anywhere, and edit bytes at
// random offsets (letters in strings, escapes, digits next to digits,
// arbitrary bytes); the caller's buffer is reused and overwritten after
// each parse, so views that alias a body show up.
func CheckReuse(t *testing.T, api *rewrite.Descriptor, c ReuseCase, seed uint64, steps int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	views := rewrite.NewViewCache(rewrite.DefaultViewCacheBytes)
	codec := api.NewCodec(views)
	var elems []string
	for range 20 + rng.IntN(20) {
		elems = append(elems, c.Pool[rng.IntN(len(c.Pool))])
	}
	buf := make([]byte, 0, 1<<20)
	parsed, elemsParsed := 0, 0
	var prevBody []byte // the last body parsed, and its lineage's gen
	var prevGen uint64
	lineages := 0 // bodies whose lineage named the previous one
	defer func() {
		if t.Failed() {
			return
		}
		if lineages == 0 && steps >= 100 {
			t.Fatalf("seed %d: no body's lineage named the one before it", seed)
		}
		if parsed < steps/2 {
			t.Fatalf("seed %d: only %d of %d steps parsed: the case exercises errors only", seed, parsed, steps)
		}
		// Over enough steps, most elements are reused, not looked up again.
		if hits, misses := views.Stats(); steps >= 100 && int(hits+misses) > elemsParsed/2 {
			t.Fatalf("seed %d: %d of %d elements looked up: the memo reused few", seed, hits+misses, elemsParsed)
		}
	}()
	for step := range steps {
		switch op := rng.IntN(10); {
		case op < 4 || len(elems) < 3:
			for range 1 + rng.IntN(3) {
				elems = append(elems, c.Pool[rng.IntN(len(c.Pool))])
			}
		case op < 5:
			elems = elems[:len(elems)-1-rng.IntN(2)]
		case op < 6:
			elems = append([]string(nil), elems...)
			elems[rng.IntN(len(elems))] = c.Pool[rng.IntN(len(c.Pool))]
		}
		body := c.Build(elems)
		if rng.IntN(3) == 0 {
			body = editBytes(rng, body)
		}
		buf = append(buf[:0], body...)
		got, gerr := codec.ParseRequest(buf)
		want, werr := ParseUncached(api, body)
		what := fmt.Sprintf("seed %d step %d", seed, step)
		if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
			t.Fatalf("%s: error %v, from scratch %v", what, gerr, werr)
		}
		if werr == nil {
			// The lineage's contract: a body compared with the previous
			// one shares exactly Shared bytes with it.
			if lin := got.Lineage; lin.Prev != 0 && lin.Prev == prevGen {
				n := 0
				for n < min(len(body), len(prevBody)) && body[n] == prevBody[n] {
					n++
				}
				if n != lin.Shared {
					t.Fatalf("%s: lineage says %d shared bytes, the bodies share %d", what, lin.Shared, n)
				}
				lineages++
			}
			prevBody, prevGen = body, got.Lineage.Gen
			parsed, elemsParsed = parsed+1, elemsParsed+len(elems)
			t.Run(what, func(t *testing.T) { RequireSameView(t, want, got) })
			if t.Failed() {
				t.FailNow()
			}
		}
		for i := range buf {
			buf[i] = '#'
		}
	}
}

// editBytes changes body at one random place: in its last eighth (the
// conversation, past the long prefix) more often than not.
func editBytes(rng *rand.Rand, body []byte) []byte {
	out := append([]byte(nil), body...)
	at := rng.IntN(len(out))
	if rng.IntN(4) != 0 {
		at = len(out) - 1 - rng.IntN(len(out)/8)
	}
	// Look for a byte of the kind the edit wants, from at on.
	find := func(ok func(byte) bool) int {
		for i := at; i < len(out); i++ {
			if ok(out[i]) {
				return i
			}
		}
		return -1
	}
	isLower := func(b byte) bool { return b >= 'a' && b <= 'z' }
	isDigit := func(b byte) bool { return b >= '0' && b <= '9' }
	splice := func(i, drop int, s string) []byte {
		return append(out[:i:i], append([]byte(s), out[i+drop:]...)...)
	}
	switch rng.IntN(6) {
	case 0: // another letter
		if i := find(isLower); i >= 0 {
			out[i] = byte('a' + rng.IntN(26))
		}
	case 1: // the same letter, escaped
		if i := find(isLower); i >= 0 {
			return splice(i, 1, fmt.Sprintf(`\u%04x`, out[i]))
		}
	case 2: // a digit more, after a digit
		if i := find(isDigit); i >= 0 {
			return splice(i+1, 0, string(rune('0'+rng.IntN(10))))
		}
	case 3: // a digit less
		if i := find(isDigit); i >= 0 {
			return splice(i, 1, "")
		}
	case 4: // an escape inside a string
		if i := find(isLower); i >= 0 {
			return splice(i, 0, []string{`\n`, `\"`, `\\`, `\t`, `\/`, `é`}[rng.IntN(6)])
		}
	default: // anything
		const bytes = `{}[],:"0a \`
		return splice(at, rng.IntN(2), string(bytes[rng.IntN(len(bytes))]))
	}
	return out
}

// LongPrefix is a system prompt long enough for the index memo to keep a
// body (it keeps those of 64 KB and more).
var LongPrefix = strings.Repeat("Follow the house rules. ", 3000)

// CheckReuseSeeds is CheckReuse for seeds 0-3, steps each (40 under -short).
func CheckReuseSeeds(t *testing.T, api *rewrite.Descriptor, c ReuseCase, steps int) {
	t.Helper()
	if testing.Short() {
		steps = min(steps, 40)
	}
	for seed := range uint64(4) {
		CheckReuse(t, api, c, seed, steps)
	}
}
