package rewrite

import (
	"slices"
	"sort"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// mergedMemo is what ParseMergedMessages built from a conversation's
// element views: the messages (handed out, never written again), the
// element each starts with, and the anchor chain after each.
type mergedMemo struct {
	msgs    []conv.Message
	first   []int
	chains  []conv.ChainState
	anchors []string // handed out, never written again
}

// ParseMergedMessages is ParseMessages for an API whose messages are runs
// of its elements: an element for which join(last, next) reports true (last
// the message built so far, next the element's view) has its blocks
// appended to the message before it. The messages built only from elements
// the previous body shared, and not the last of them (the next element may
// join it), are the previous request's, with their anchors. The returned
// slices are shared with the memo: read-only.
func ParseMergedMessages(b *Body, arr gjson.Result, key string, p ViewParser, parse func(gjson.Result, *ToolNames) (conv.Message, error), join func(last, next *conv.Message) bool) ([]conv.Message, []string, error) {
	var prm *mergedMemo
	if b.entry != nil && b.entry.conv != nil {
		prm = b.entry.conv.merged
	}
	elems, _, own, k, err := b.parseElems(arr, key, p, parse, false)
	if err != nil {
		return nil, nil, err
	}
	if own == nil {
		return mergeViews(slices.Clone(elems), join), nil, nil
	}
	// The messages whose elements all come before the last message that
	// starts inside the k shared elements are final.
	reuse := 0
	if prm != nil && k > 0 {
		reuse = max(sort.Search(len(prm.first), func(j int) bool { return prm.first[j] >= k })-1, 0)
	}
	m := &mergedMemo{msgs: make([]conv.Message, reuse, reuse+reuse/8+16), anchors: make([]string, reuse, reuse+reuse/8+16)}
	from := 0
	if reuse > 0 {
		copy(m.msgs, prm.msgs[:reuse])
		copy(m.anchors, prm.anchors[:reuse])
		m.first, m.chains = prm.first[:reuse], prm.chains[:reuse] // never handed out: ours to overwrite
		from = prm.first[reuse]
	}
	for e := from; e < len(elems); e++ {
		next := elems[e]
		if n := len(m.msgs); n > 0 && join(&m.msgs[n-1], &next) {
			last := &m.msgs[n-1]
			// A fresh array: the blocks so far are shared with handed-out views.
			last.Blocks = append(slices.Clip(last.Blocks), next.Blocks...)
			last.Digest = nil // the merged message has its own digest
			continue
		}
		m.msgs = append(m.msgs, next)
		m.first = append(m.first, e)
	}
	var chain conv.AnchorChain
	if reuse > 0 {
		chain = conv.ResumeAnchors(m.chains[reuse-1])
	}
	for i := reuse; i < len(m.msgs); i++ {
		m.anchors = append(m.anchors, chain.Next(&m.msgs[i]))
		m.chains = append(m.chains, chain.State())
	}
	own.merged = m
	own.size += int64(cap(m.msgs))*int64(unsafe.Sizeof(conv.Message{})) + int64(cap(m.first))*8 +
		int64(cap(m.chains))*int64(unsafe.Sizeof(conv.ChainState{})) + int64(cap(m.anchors))*(int64(unsafe.Sizeof(""))+32)
	return slices.Clip(m.msgs), slices.Clip(m.anchors), nil
}

// mergeViews merges views in place (join as for ParseMergedMessages).
func mergeViews(views []conv.Message, join func(last, next *conv.Message) bool) []conv.Message {
	msgs := views[:0]
	for _, next := range views {
		if n := len(msgs); n > 0 && join(&msgs[n-1], &next) {
			msgs[n-1].Blocks = append(slices.Clip(msgs[n-1].Blocks), next.Blocks...)
			msgs[n-1].Digest = nil
			continue
		}
		msgs = append(msgs, next)
	}
	return msgs
}
