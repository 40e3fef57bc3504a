package rewrite

import (
	"fmt"

	"github.com/tidwall/gjson"
)

// MessageLocator is implemented by TurnCodecs that can say which elements
// of a body's conversation array each message of its view came from.
type MessageLocator interface {
	// MessageElems returns the elements of body's conversation array and,
	// for each view message, the range [r[0], r[1]) of elements it came
	// from (ErrNoBatch when the conversation is not an array of elements,
	// e.g. a Responses string input).
	MessageElems(body []byte) (elems []gjson.Result, ranges [][2]int, err error)
}

// KeepMessages returns body with only the view messages for which keep
// holds, in one walk and one copy (leaving messages out one by one with
// ReplaceMessages copies the body once per message). Kept elements keep
// their bytes and order; each is written in the slot of the array it
// lands in, with the separator the array had there (BlocksReorder). views
// is the number of messages of body's view (a locator that disagrees is an
// error); at least one message must be kept.
func KeepMessages(body []byte, loc MessageLocator, views int, keep func(msg int) bool) ([]byte, error) {
	elems, ranges, err := loc.MessageElems(body)
	if err != nil {
		return nil, err
	}
	if len(ranges) != views {
		return nil, fmt.Errorf("rewrite: %d messages located, the view has %d", len(ranges), views)
	}
	order := make([]int, 0, len(elems))
	for i, r := range ranges {
		if keep(i) {
			for e := r[0]; e < r[1]; e++ {
				order = append(order, e)
			}
		}
	}
	switch {
	case len(order) == len(elems):
		return body, nil
	case len(order) == 0:
		return nil, fmt.Errorf("rewrite: KeepMessages must keep a message")
	}
	return BlocksReorder(body, elems, order), nil
}

// OneElementPerMessage is MessageElems for APIs whose view messages are the
// elements of the top-level array key one for one.
func OneElementPerMessage(body []byte, key string) ([]gjson.Result, [][2]int, error) {
	_, arr, err := BlocksConversation(body, key)
	if err != nil {
		return nil, nil, err
	}
	elems := BlocksElems(arr)
	ranges := make([][2]int, len(elems))
	for i := range ranges {
		ranges[i] = [2]int{i, i + 1}
	}
	return elems, ranges, nil
}
