package turn

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/shepherd-proxy/shepherd/state"
)

// The prefix slot is read and written on every turn a serialising store
// (Redis) serves; encoding/json spent 7% of such a turn's CPU on it (its
// packed hashes run to KB on long histories). decodePrefixSlot reads the
// slots this engine writes without reflection and leaves anything else to
// encoding/json (state.SameShapeFast), which stays the reference
// (FuzzPrefixSlotCodec holds the two to the same result); AppendSlotJSON
// writes what encoding/json writes for the state.

// decodePrefixSlot decodes the slot's stored JSON.
var decodePrefixSlot = state.SameShapeFast("turn engine", 1, PrefixSlotVersion, decodePrefixFast)

// The JSON names of the slot's structs.
var (
	prefixStateKeys = []string{"tracks", "turns", "breaks"}
	prefixTrackKeys = []string{"first", "agent_len", "agent_sum", "upstream"}
	prefixTurnKeys  = []string{"at", "request_id", "prefix_hash", "elements", "first", "break_offset", "break_element", "cause", "cache_read_tokens", "cache_write_tokens"}
)

// decodePrefixFast decodes data into s as encoding/json would, or reports
// false (s then holds nothing the caller keeps).
func decodePrefixFast(data []byte, s *PrefixState) bool {
	return jsonkit.DecodeDocument(data, prefixStateKeys, func(key, v string) bool {
		switch key {
		case "tracks":
			return jsonkit.DecodeArray(v, &s.Tracks, decodePrefixTrack)
		case "turns":
			if jsonkit.HasElements(v) {
				s.Turns, s.storedTurns = nil, strings.Clone(v) // decoded when read (PrefixOf)
				return true
			}
			return jsonkit.DecodeArray(v, &s.Turns, decodePrefixTurn)
		case "breaks":
			return jsonkit.DecodeMap(v, &s.Breaks, jsonkit.DecodeInt)
		}
		return true
	})
}

func decodePrefixTrack(v string, t *prefixTrack) bool {
	_, ok := jsonkit.DecodeObject(v, prefixTrackKeys, func(key, v string) bool {
		switch key {
		case "first":
			n := uint64(t.First)
			if !jsonkit.DecodeUint(v, 32, &n) {
				return false
			}
			t.First = uint32(n)
		case "agent_len":
			return jsonkit.DecodeInt(v, &t.AgentLen)
		case "agent_sum":
			return jsonkit.DecodeUint(v, 64, &t.AgentSum)
		case "upstream":
			var packed string
			if !jsonkit.DecodeString(v, &packed) {
				return false
			}
			t.Upstream = unpackHashes(packed)
		}
		return true
	})
	return ok
}

func decodePrefixTurn(v string, p *PrefixTurn) bool {
	_, ok := jsonkit.DecodeObject(v, prefixTurnKeys, func(key, v string) bool {
		switch key {
		case "at":
			return jsonkit.DecodeTime(v, &p.At)
		case "request_id":
			return jsonkit.DecodeString(v, &p.RequestID)
		case "prefix_hash":
			return jsonkit.DecodeString(v, &p.Hash)
		case "elements":
			return jsonkit.DecodeInt(v, &p.Elements)
		case "first":
			return jsonkit.DecodeBool(v, &p.First)
		case "break_offset":
			return jsonkit.DecodeInt(v, &p.BreakOffset)
		case "break_element":
			return jsonkit.DecodeInt(v, &p.BreakElement)
		case "cause":
			return jsonkit.DecodeString(v, &p.Cause)
		case "cache_read_tokens":
			return jsonkit.DecodeInt(v, &p.CacheReadTokens)
		case "cache_write_tokens":
			return jsonkit.DecodeInt(v, &p.CacheWriteTokens)
		}
		return true
	})
	return ok
}

// decodeStoredTurns decodes storedTurns into Turns, as encoding/json would
// have decoded the slot's turns.
func (s *PrefixState) decodeStoredTurns() error {
	if err := jsonkit.TakeStored(&s.storedTurns, &s.Turns, decodePrefixTurn); err != nil {
		return fmt.Errorf("turns: %w", err)
	}
	return nil
}

// appendStoredTurn records p after the last maxPrefixTurns-1 stored turns,
// keeping them undecoded; false when the turns are not stored (or p cannot
// be written: the caller then decodes them and records p as a value, as
// it does any turn).
func (s *PrefixState) appendStoredTurn(p *PrefixTurn) bool {
	if s.storedTurns == "" {
		return false
	}
	turns, err := jsonkit.AppendStoredArray(s.storedTurns, maxPrefixTurns-1, 1, func(dst []byte, _ int) ([]byte, error) {
		return appendPrefixTurn(dst, p)
	})
	if err != nil {
		if s.decodeStoredTurns() != nil {
			s.Turns, s.storedTurns = nil, "" // unreadable: the turn starts the list again
		}
		return false
	}
	s.storedTurns = turns
	return true
}

// AppendSlotJSON implements state.SlotAppender: the JSON encoding/json
// writes for s (strings escaped by jsonkit.AppendString).
func (s *PrefixState) AppendSlotJSON(dst []byte) ([]byte, error) {
	dst = append(dst, '{')
	sep := false
	comma := func() {
		if sep {
			dst = append(dst, ',')
		}
		sep = true
	}
	if len(s.Tracks) > 0 {
		comma()
		dst = append(dst, `"tracks":[`...)
		for i := range s.Tracks {
			if i > 0 {
				dst = append(dst, ',')
			}
			t := &s.Tracks[i]
			dst = strconv.AppendUint(append(dst, `{"first":`...), uint64(t.First), 10)
			dst = strconv.AppendInt(append(dst, `,"agent_len":`...), int64(t.AgentLen), 10)
			dst = strconv.AppendUint(append(dst, `,"agent_sum":`...), t.AgentSum, 10)
			dst = t.Upstream.appendJSON(append(dst, `,"upstream":`...))
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if s.storedTurns != "" {
		comma()
		dst = append(append(dst, `"turns":`...), s.storedTurns...)
	} else if len(s.Turns) > 0 {
		comma()
		dst = append(dst, `"turns":[`...)
		for i := range s.Turns {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendPrefixTurn(dst, &s.Turns[i]); err != nil {
				return dst, err
			}
		}
		dst = append(dst, ']')
	}
	if len(s.Breaks) > 0 {
		comma()
		dst = append(dst, `"breaks":{`...)
		for i, k := range slices.Sorted(maps.Keys(s.Breaks)) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(append(jsonkit.AppendString(dst, k), ':'), s.Breaks[k], 10)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}'), nil
}

func appendPrefixTurn(dst []byte, p *PrefixTurn) ([]byte, error) {
	dst, err := jsonkit.AppendTime(append(dst, `{"at":`...), p.At)
	if err != nil {
		return dst, err
	}
	if p.RequestID != "" {
		dst = jsonkit.AppendString(append(dst, `,"request_id":`...), p.RequestID)
	}
	dst = jsonkit.AppendString(append(dst, `,"prefix_hash":`...), p.Hash)
	dst = strconv.AppendInt(append(dst, `,"elements":`...), int64(p.Elements), 10)
	if p.First {
		dst = append(dst, `,"first":true`...)
	}
	dst = strconv.AppendInt(append(dst, `,"break_offset":`...), int64(p.BreakOffset), 10)
	dst = strconv.AppendInt(append(dst, `,"break_element":`...), int64(p.BreakElement), 10)
	if p.Cause != "" {
		dst = jsonkit.AppendString(append(dst, `,"cause":`...), p.Cause)
	}
	dst = strconv.AppendInt(append(dst, `,"cache_read_tokens":`...), p.CacheReadTokens, 10)
	dst = strconv.AppendInt(append(dst, `,"cache_write_tokens":`...), p.CacheWriteTokens, 10)
	return append(dst, '}'), nil
}
