package jsonkit

// smallObject is the member count up to which keys are compared pairwise;
// larger objects use a map.
const smallObject = 16

// DuplicateKey returns the first root member name that repeats an earlier
// one, compared after JSON unescaping (so "mod\u0065l" repeats "model").
// The validator recorded every root key on its way, so this reads no body
// bytes beyond the keys themselves.
func (d *Index) DuplicateKey() (dup string, found bool) {
	if d == nil || len(d.members) < 2 {
		return "", false
	}
	var small [smallObject]string
	keys := small[:0]
	var seen map[string]struct{}
	for i := range d.members {
		key := d.members[i].name()
		switch {
		case seen != nil:
			if _, ok := seen[key]; ok {
				return key, true
			}
			seen[key] = struct{}{}
		default:
			for _, k := range keys {
				if k == key {
					return key, true
				}
			}
			if len(keys) < smallObject {
				keys = append(keys, key)
				continue
			}
			seen = make(map[string]struct{}, 2*smallObject)
			for _, k := range keys {
				seen[k] = struct{}{}
			}
			seen[key] = struct{}{}
		}
	}
	return "", false
}
