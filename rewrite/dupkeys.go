package rewrite

import (
	"fmt"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// duplicateKeyError returns an error wrapping ErrMalformed, naming the
// key, when the top-level object idx indexed has a member name twice (after
// JSON unescaping, so "mod\u0065l" repeats "model"). RFC 8259 leaves such
// objects' meaning open and readers disagree: providers keep the last
// member while gjson, and so shepherd's hooks, read and edit the first. A
// request shepherd would see one way and the upstream another is refused.
//
// It reads only the keys the validator recorded in the index, so it costs
// nothing that grows with the body.
func duplicateKeyError(idx *jsonkit.Index) error {
	if key, dup := idx.DuplicateKey(); dup {
		if printableKey(key) {
			return fmt.Errorf("%w: duplicate top-level key %q", ErrMalformed, key)
		}
		return fmt.Errorf("%w: duplicate top-level key", ErrMalformed)
	}
	return nil
}

// printableKey reports whether a key is short printable ASCII, safe to
// name in an error message.
func printableKey(k string) bool {
	if len(k) == 0 || len(k) > 64 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}
