package state

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// appendRecord appends s's record at RecordVersion to dst: the document
// encoding/json writes for record{RecordVersion, s} (fields in order, empty
// optional ones left out, map keys sorted, slots as {"v","data","note",
// "counts"}), read the same by any JSON parser. Strings are escaped by
// jsonkit.AppendString (HTML characters are not escaped; encoding/json
// escapes them). A slot that is not a *RawSlot is encoded by encoding/json
// (it is the hook's own type); raw slot data already compact and valid is
// copied as it is, anything else compacted by encoding/json, which also
// refuses what is not JSON.
//
// It is hand-written because encoding/json compacted the whole slots
// object once more after Slots.MarshalJSON wrote it, and walked the
// session by reflection: 15% of the Redis store's CPU per turn.
//
// The slots' notes and counts it writes go to seen too, when not nil: the
// summary of the session reads them there, not from the slots again (a
// long session's counts walk its chapters and audit).
func appendRecord(dst []byte, s *Session, seen *slotFacts) ([]byte, error) {
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, RecordVersion, 10)
	dst = jsonkit.AppendString(append(dst, `,"id":`...), s.ID)
	dst = jsonkit.AppendString(append(dst, `,"tenant":`...), s.Tenant)
	var err error
	if dst, err = jsonkit.AppendTime(append(dst, `,"created_at":`...), s.CreatedAt); err != nil {
		return dst, err
	}
	if dst, err = jsonkit.AppendTime(append(dst, `,"updated_at":`...), s.UpdatedAt); err != nil {
		return dst, err
	}
	dst = strconv.AppendInt(append(dst, `,"requests":`...), s.Requests, 10)
	if s.Agent != "" {
		dst = jsonkit.AppendString(append(dst, `,"agent":`...), s.Agent)
	}
	if s.Model != "" {
		dst = jsonkit.AppendString(append(dst, `,"model":`...), s.Model)
	}
	if dst, err = appendUsage(append(dst, `,"usage":`...), &s.Usage); err != nil {
		return dst, err
	}
	if len(s.Ledger) > 0 {
		dst = append(dst, `,"ledger":[`...)
		for i := range s.Ledger {
			if i > 0 {
				dst = append(dst, ',')
			}
			e := &s.Ledger[i]
			dst = jsonkit.AppendString(append(dst, `{"kind":`...), e.Kind)
			dst = jsonkit.AppendString(append(dst, `,"anchor":`...), e.Anchor)
			if e.Root != "" {
				dst = jsonkit.AppendString(append(dst, `,"root":`...), e.Root)
			}
			if e.At != 0 {
				dst = strconv.AppendInt(append(dst, `,"at":`...), int64(e.At), 10)
			}
			if len(e.Data) > 0 {
				dst = append(dst, `,"data":"`...)
				dst = base64.StdEncoding.AppendEncode(dst, e.Data)
				dst = append(dst, '"')
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if len(s.Slots) > 0 {
		if dst, err = appendSlots(append(dst, `,"slots":`...), s.Slots, seen); err != nil {
			return dst, err
		}
	}
	if len(s.Routes) > 0 {
		dst = append(dst, `,"routes":{`...)
		for i, lane := range slices.Sorted(maps.Keys(s.Routes)) {
			if i > 0 {
				dst = append(dst, ',')
			}
			r := s.Routes[lane]
			dst = append(jsonkit.AppendString(dst, lane), ":{"...)
			if r.Rule != "" {
				dst = append(jsonkit.AppendString(append(dst, `"rule":`...), r.Rule), ',')
			}
			dst = jsonkit.AppendString(append(dst, `"requested_model":`...), r.RequestedModel)
			dst = jsonkit.AppendString(append(dst, `,"model":`...), r.Model)
			dst = jsonkit.AppendString(append(dst, `,"upstream":`...), r.Upstream)
			dst = append(dst, '}')
		}
		dst = append(dst, '}')
	}
	dst = strconv.AppendInt(append(dst, `,"version":`...), s.Version, 10)
	return append(dst, '}'), nil
}

// recordSizeHint is about the length of s's record (a little more for
// plain text), so that appendRecord's buffer does not grow by copying.
func recordSizeHint(s *Session) int {
	n := 512 + len(s.ID) + len(s.Tenant) + len(s.Agent) + len(s.Model) + 128*len(s.Routes)
	for i := range s.Ledger {
		e := &s.Ledger[i]
		n += 68 + len(e.Kind) + len(e.Anchor) + len(e.Root) + base64.StdEncoding.EncodedLen(len(e.Data))
	}
	for _, sl := range s.Slots {
		n += 96
		if r, ok := sl.(*RawSlot); ok {
			n += len(r.Data) + len(r.Noted) + 32*len(r.Counted)
		} else {
			n += 1024 // a hook's typed slot: unknown until encoded
		}
	}
	return n + n/8
}

func appendUsage(dst []byte, u *Usage) ([]byte, error) {
	dst = strconv.AppendInt(append(dst, `{"turns":`...), u.Turns, 10)
	dst = strconv.AppendInt(append(dst, `,"input_tokens":`...), u.InputTokens, 10)
	dst = strconv.AppendInt(append(dst, `,"output_tokens":`...), u.OutputTokens, 10)
	dst = strconv.AppendInt(append(dst, `,"cache_read_tokens":`...), u.CacheReadTokens, 10)
	dst = strconv.AppendInt(append(dst, `,"cache_write_tokens":`...), u.CacheWriteTokens, 10)
	dst = append(dst, `,"cost_usd":`...)
	var err error
	if dst, err = jsonkit.AppendFloat(dst, u.CostUSD, 64); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// appendSlots appends the slots as Slots.MarshalJSON does, and collects
// their notes and counts into seen (when not nil).
func appendSlots(dst []byte, slots Slots, seen *slotFacts) ([]byte, error) {
	dst = append(dst, '{')
	first := true
	for _, name := range slices.Sorted(maps.Keys(slots)) {
		sl := slots[name]
		if sl == nil {
			continue
		}
		r, err := rawSlotOf(name, sl)
		if err != nil {
			return dst, err
		}
		seen.add(name, r.Noted, r.Counted)
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(jsonkit.AppendString(dst, name), `:{"v":`...)
		dst = strconv.AppendInt(dst, int64(r.V), 10)
		if len(r.Data) > 0 {
			if dst, err = appendRawJSON(append(dst, `,"data":`...), r.Data); err != nil {
				return dst, fmt.Errorf("state: encoding slot %q: %w", name, err)
			}
		}
		if r.Noted != "" {
			dst = jsonkit.AppendString(append(dst, `,"note":`...), r.Noted)
		}
		if len(r.Counted) > 0 {
			dst = append(dst, `,"counts":{`...)
			for i, k := range slices.Sorted(maps.Keys(r.Counted)) {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(jsonkit.AppendString(dst, k), ':')
				dst = strconv.AppendInt(dst, r.Counted[k], 10)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, '}')
	}
	return append(dst, '}'), nil
}

// appendRawJSON appends raw, which must be JSON, compacted as encoding/json
// writes a json.RawMessage: as it is when it is valid and holds no
// whitespace, else through json.Compact (which refuses what is not JSON).
func appendRawJSON(dst, raw []byte) ([]byte, error) {
	if bytes.IndexAny(raw, " \t\r\n") < 0 && jsonkit.Valid(raw) {
		return append(dst, raw...), nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return dst, err
	}
	return append(dst, b.Bytes()...), nil
}
