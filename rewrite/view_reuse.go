package rewrite

import (
	"slices"
	"sort"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// Reusing the previous request's views. An agent resends its whole
// conversation with a few elements added (and the last one or two
// re-serialised: cache markers move). The index memo (index_memo.go)
// compares the new body with the conversation's previous one byte for
// byte; every element that ends inside the bytes they share (a number
// only if the byte after it is shared too: it might have grown) is the
// same element at the same place, so its view, resolved against the same
// elements before it, and its anchor are the previous request's. Only the
// elements after them are looked up in the view cache and resolved, and
// only their anchors computed: the work no longer grows with the history.

// convMemo is what ParseMessages read from the conversation array of one
// body. The entry that holds it owns it. Its msgs and anchors are handed
// out (clipped to their length) and never written again up to the length
// handed out: a later body that shares all of them appends after them in
// place, one that shares fewer copies the ones it shares. spans and chains
// are never handed out and are overwritten freely.
type convMemo struct {
	parser ViewParser
	arrAt  int        // offset of the array member's value in the body
	spans  []elemSpan // the elements' bytes
	msgs   []conv.Message
	// chains and anchors are the anchor chain's state after each message
	// and its anchor (conv.AnchorChain); empty when anchors were not asked
	// for (the API's messages are not its elements one for one).
	chains  []conv.ChainState
	anchors []string
	// merged is what ParseMergedMessages built from msgs; nil: none.
	merged *mergedMemo
	// valid is how many leading bytes of the body this was read from
	// equal those of the entry's body.
	valid int
	size  int64
}

// elemSpan is where an element lies in the body, and how many blocks the
// views up to it hold (for the memo's size).
type elemSpan struct{ start, end, blocks int }

// bytes is what c holds beyond the body, roughly: its arrays and the
// strings of its views (about the elements' own size).
func (c *convMemo) bytes() int64 {
	if c == nil {
		return 0
	}
	return c.size
}

// sharing is c for a body that shares n leading bytes with the one c's
// entry held.
func (c *convMemo) sharing(n int) *convMemo {
	if c == nil {
		return nil
	}
	d := *c
	d.valid = min(d.valid, n)
	return &d
}

// reusable returns the memo for arr parsed by p and how many of its
// leading elements are this body's own, byte for byte at the same place
// (0 and nil when none are).
func (b *Body) reusable(arr gjson.Result, p ViewParser, anchors bool) (*convMemo, int) {
	if b.entry == nil {
		return nil, 0
	}
	pr := b.entry.conv
	if pr == nil || pr.parser != p || pr.arrAt != arr.Index || (anchors && len(pr.chains) != len(pr.msgs)) {
		return nil, 0
	}
	// The elements inside the shared bytes. One that ends where they end
	// is whole only if it is not a number (the next byte, not shared,
	// might be a digit of it); conversation elements are objects.
	k := sort.Search(len(pr.spans), func(i int) bool { return pr.spans[i].end > pr.valid })
	if k > 0 && pr.spans[k-1].end == pr.valid && isDigit(b.entry.body[pr.valid-1]) {
		k--
	}
	if k == 0 {
		return nil, 0
	}
	// The shared bytes place the elements where they were; check the last
	// one reused against the index all the same.
	if s, e, ok := b.Idx.ElemSpan(arr, k-1); !ok || s != pr.spans[k-1].start || e != pr.spans[k-1].end {
		return nil, 0
	}
	return pr, k
}

// parseElems is ParseMessages (ParseElements without anchors): the views
// of arr's elements, those the previous body shared taken from the memo.
// k is how many leading elements came from the memo; when the memo keeps
// nothing for b, own is nil.
func (b *Body) parseElems(arr gjson.Result, key string, p ViewParser, parse func(gjson.Result, *ToolNames) (conv.Message, error), anchors bool) (msgs []conv.Message, out []string, own *convMemo, k int, err error) {
	r := ViewResolver{Cache: b.views, Parser: p, Parse: parse}
	var idx = b.Idx
	if b.entry == nil || !b.views.enabled() || idx.ElemCount(arr) < 0 {
		// Nothing to remember: parse as always.
		idx.Each(arr, func(i int, m gjson.Result) bool {
			var msg conv.Message
			if msg, err = r.Message(m); err != nil {
				err = AtField(AtIndex(err, i), key)
				return false
			}
			msgs = append(msgs, msg)
			return true
		})
		return msgs, nil, nil, 0, err
	}
	own = &convMemo{parser: p, arrAt: arr.Index, valid: len(b.entry.body)}
	var pr *convMemo
	pr, k = b.reusable(arr, p, anchors)
	if pr != nil {
		// The entry (and so pr's arrays) is ours; what it handed out
		// (msgs, anchors) must stay as it was.
		own.spans, own.msgs = pr.spans[:k], pr.msgs[:k]
		if k < len(pr.msgs) {
			own.msgs = append(make([]conv.Message, 0, k+k/8+16), own.msgs...)
		}
		if anchors {
			own.chains, own.anchors = pr.chains[:k], pr.anchors[:k]
			if k < len(pr.anchors) {
				own.anchors = append(make([]string, 0, cap(own.msgs)), own.anchors...)
			}
		}
	}
	b.entry.conv = nil // pr's arrays change below
	b.views.reused.Add(uint64(k))
	r.prior = own.msgs
	idx.EachFrom(arr, k, func(i int, m gjson.Result) bool {
		var msg conv.Message
		if msg, err = r.Message(m); err != nil {
			err = AtField(AtIndex(err, i), key)
			return false
		}
		blocks := len(msg.Blocks)
		if n := len(own.spans); n > 0 {
			blocks += own.spans[n-1].blocks
		}
		own.msgs = append(own.msgs, msg)
		own.spans = append(own.spans, elemSpan{m.Index, m.Index + len(m.Raw), blocks})
		return true
	})
	if err != nil {
		return nil, nil, nil, 0, err
	}
	if anchors {
		var chain conv.AnchorChain
		if k > 0 {
			chain = conv.ResumeAnchors(own.chains[k-1])
		}
		for i := k; i < len(own.msgs); i++ {
			own.anchors = append(own.anchors, chain.Next(&own.msgs[i]))
			own.chains = append(own.chains, chain.State())
		}
		out = slices.Clip(own.anchors)
	}
	own.size = convMemoBytes(arr, own)
	b.entry.conv = own
	return slices.Clip(own.msgs), out, own, k, nil
}

// convMemoBytes estimates what c holds for the array arr: its raw size
// (the views' strings), the arrays, and the views' blocks.
func convMemoBytes(arr gjson.Result, c *convMemo) int64 {
	n := int64(len(arr.Raw)) +
		int64(cap(c.spans))*int64(unsafe.Sizeof(elemSpan{})) +
		int64(cap(c.msgs))*int64(unsafe.Sizeof(conv.Message{})) +
		int64(cap(c.chains))*int64(unsafe.Sizeof(conv.ChainState{})) +
		int64(cap(c.anchors))*(int64(unsafe.Sizeof(""))+32)
	if k := len(c.spans); k > 0 {
		n += int64(c.spans[k-1].blocks) * int64(unsafe.Sizeof(conv.Block{}))
	}
	return n
}

// priorCallName is the name of the newest call with id among msgs (views
// whose calls a resolver did not record: the previous request's), "" when
// none: what the resolver would have answered had it seen them.
func priorCallName(msgs []conv.Message, id string) string {
	if id == "" {
		return ""
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		blocks := msgs[i].Blocks
		for j := len(blocks) - 1; j >= 0; j-- {
			if b := &blocks[j]; b.Kind == conv.BlockToolCall && b.ToolCallID == id && b.ToolName != "" {
				return b.ToolName
			}
		}
	}
	return ""
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
