package rewrite

import "fmt"

// CheckDuplicateKeys returns an error wrapping ErrMalformed, naming the key,
// when the top-level object of body has a member name twice (after JSON
// unescaping, so "mod\u0065l" repeats "model"). RFC 8259 leaves such
// objects' meaning open and readers disagree: providers keep the last
// member while gjson, and so shepherd's hooks, read and edit the first. A
// request shepherd would see one way and the upstream another is refused.
//
// It reads only the top level: one pass that skips member values by their
// brackets and quotes (eachMember, skip.go), so a 50 KB body costs a few microseconds.
// Input that is not a JSON object, or is malformed, returns nil: validation
// reports that.
func CheckDuplicateKeys(body []byte) error {
	if key, dup := duplicateTopLevelKey(bstr(body)); dup {
		if printableKey(key) {
			return fmt.Errorf("%w: duplicate top-level key %q", ErrMalformed, key)
		}
		return fmt.Errorf("%w: duplicate top-level key", ErrMalformed)
	}
	return nil
}

// smallObject is the member count up to which keys are compared pairwise;
// larger objects use a map.
const smallObject = 16

// duplicateTopLevelKey returns the first top-level member name of the
// object s that repeats an earlier one.
func duplicateTopLevelKey(s string) (dup string, found bool) {
	i := skipWS(s, 0)
	if i >= len(s) || s[i] != '{' {
		return "", false
	}
	var small [smallObject]string
	keys := small[:0]
	var seen map[string]struct{}
	eachMember(s, i, func(key string, _, _ int) bool {
		switch {
		case seen != nil:
			if _, ok := seen[key]; ok {
				dup, found = key, true
				return false
			}
			seen[key] = struct{}{}
		default:
			for _, k := range keys {
				if k == key {
					dup, found = key, true
					return false
				}
			}
			if len(keys) < smallObject {
				keys = append(keys, key)
			} else {
				seen = make(map[string]struct{}, 2*smallObject)
				for _, k := range keys {
					seen[k] = struct{}{}
				}
				seen[key] = struct{}{}
			}
		}
		return true
	})
	return dup, found
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
