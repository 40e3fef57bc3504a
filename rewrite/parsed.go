package rewrite

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// Parsed is what one request's codec remembers of the body it parsed: the
// body and its index (jsonkit.Index). The turn engine then edits that body
// a few times (ledger replay, added tools, a system note); each edit needs
// a root member or the conversation's elements, and finding them by walking
// the body costs a pass over the whole history per edit. Through Parsed an
// edit finds them in the index, works on a small body holding only the
// member it edits (EditMember), and leaves Parsed remembering the edited
// body with its index shifted, so the next edit is indexed too.
//
// A Parsed belongs to one request (the codec NewCodec made for it); it is
// not safe for concurrent use. A nil *Parsed remembers nothing: every
// method then behaves as the unindexed path. It holds no state a request
// would notice: it only saves walks, never changes a result.
type Parsed struct {
	idx *jsonkit.Index // indexes the last body remembered; nil: none
}

// Remember records idx, the index of a body just parsed.
func (p *Parsed) Remember(idx *jsonkit.Index) {
	if p != nil {
		p.idx = idx
	}
}

// IndexOf returns the index of body when body is the body remembered (the
// same bytes: same array, same length), else nil.
func (p *Parsed) IndexOf(body []byte) *jsonkit.Index {
	if p == nil || !p.idx.Covers(body) {
		return nil
	}
	return p.idx
}

// Elements returns the elements of body's root array member key from the
// index when body is the body remembered; ok is false otherwise (the caller
// walks the body).
func (p *Parsed) Elements(body []byte, key string) ([]gjson.Result, bool) {
	return p.IndexOf(body).Elements(key)
}

// EditMember returns op applied to body, when op edits nothing but the
// value of body's root member key. When body is the body remembered and has
// that member, op runs on a small body holding only it ({"key":value}),
// and its result's value is put in place of the old one; Parsed then
// remembers the result. Otherwise op runs on the whole body and Parsed
// forgets. op must leave the small body a one-member object with the same
// key, its value of the same kind (array or not); a result of any other
// shape makes EditMember apply op to the whole body instead.
func (p *Parsed) EditMember(body []byte, key string, op func(body []byte) ([]byte, error)) ([]byte, error) {
	idx := p.IndexOf(body)
	start, end, ok := idx.MemberSpan(key)
	if !ok {
		p.Remember(nil)
		return op(body)
	}
	prefix := AppendMemberPrefix(nil, key)
	mini := make([]byte, 0, len(prefix)+end-start+1)
	mini = append(append(append(mini, prefix...), body[start:end]...), '}')
	edited, err := op(mini)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(edited, prefix) || len(edited) < len(prefix)+2 || edited[len(edited)-1] != '}' ||
		(edited[len(prefix)] == '[') != (body[start] == '[') {
		p.Remember(nil)
		return op(body)
	}
	value := edited[len(prefix) : len(edited)-1]
	out := jsonkit.Splice(body, start, end, value)
	p.Remember(idx.MemberReplaced(out, key, len(value)))
	return out, nil
}

// MemberEdited tells p that out is body with edits confined to the value of
// its root member key, n bytes longer (or shorter, n < 0) than before, so
// that p keeps indexing the result; p forgets when body was not the body
// it remembered.
func (p *Parsed) MemberEdited(body, out []byte, key string, n int) {
	idx := p.IndexOf(body)
	start, end, ok := idx.MemberSpan(key)
	if !ok {
		p.Remember(nil)
		return
	}
	p.Remember(idx.MemberReplaced(out, key, end-start+n))
}

// AppendMemberPrefix appends `{"key":` to dst, the key quoted as JSON.
func AppendMemberPrefix(dst []byte, key string) []byte {
	dst = append(dst, '{')
	dst = jsonkit.AppendString(dst, key)
	return append(dst, ':')
}
