package jsonkit

// smallObject is the member count up to which keys are compared pairwise;
// larger objects use a map.
const smallObject = 16

// DuplicateTopLevelKey returns the first top-level member name of the
// object s that repeats an earlier one (compared after JSON unescaping).
// Input that is not an object, or is malformed, gives found false.
func DuplicateTopLevelKey(s string) (dup string, found bool) {
	i := SkipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return "", false
	}
	var small [smallObject]string
	keys := small[:0]
	var seen map[string]struct{}
	EachMember(s, i, func(key string, _, _ int) bool {
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
