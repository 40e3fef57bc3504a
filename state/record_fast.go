package state

import (
	"encoding/base64"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// decodeRecordFast decodes a version-1 record in the shape encodeRecord
// writes, without reflection: members are found with jsonkit (bulk scans,
// no decoding of what is skipped), slot data stays the raw bytes it is, and
// each field is converted as encoding/json converts it. It reports ok
// false, having changed nothing the caller keeps, for anything outside that
// shape (a key that only matches a field case-insensitively, a value of
// another type, a string that is not valid UTF-8, JSON it finds invalid):
// the caller then decodes with encoding/json, which stays the reference
// (FuzzDecodeRecordFast holds the two to the same result).
//
// encoding/json's reflection was most of the Redis store's CPU per turn:
// 137 µs to decode a 23 KB record (BenchmarkRecord).
func decodeRecordFast(raw []byte, s *Session) (ok bool) {
	if !jsonkit.Valid(raw) {
		return false
	}
	if s.Ledger != nil || s.Slots != nil || s.Routes != nil {
		return false // encoding/json would merge into them
	}
	root := gjson.Parse(jsonkit.UnsafeString(raw))
	if !root.IsObject() {
		return false
	}
	d := *s // decoded into, as encoding/json does: absent fields keep s's
	_, ok = jsonkit.DecodeObject(root.Raw, sessionKeys, d.decodeMember)
	if !ok {
		return false
	}
	*s = d
	return true
}

// decodeMember sets the field named key from its raw JSON value v.
func (d *Session) decodeMember(key, v string) bool {
	switch key {
	case "v": // its value is checked by decodeRecord; here, its type
		var n int
		return jsonkit.DecodeInt(v, &n)
	case "id":
		return jsonkit.DecodeString(v, &d.ID)
	case "tenant":
		return jsonkit.DecodeString(v, &d.Tenant)
	case "created_at":
		return jsonkit.DecodeTime(v, &d.CreatedAt)
	case "updated_at":
		return jsonkit.DecodeTime(v, &d.UpdatedAt)
	case "requests":
		return jsonkit.DecodeInt(v, &d.Requests)
	case "agent":
		return jsonkit.DecodeString(v, &d.Agent)
	case "model":
		return jsonkit.DecodeString(v, &d.Model)
	case "usage":
		return fastUsage(v, &d.Usage)
	case "ledger":
		return fastLedger(v, &d.Ledger)
	case "slots":
		return fastSlots(v, &d.Slots)
	case "routes":
		return fastRoutes(v, &d.Routes)
	case "version":
		return jsonkit.DecodeInt(v, &d.Version)
	}
	return true
}

// sessionKeys are the JSON names of a record's fields (version included).
var sessionKeys = []string{"v", "id", "tenant", "created_at", "updated_at", "requests", "agent", "model", "usage", "ledger", "slots", "routes", "version"}

// usageKeys are Usage's JSON names.
var usageKeys = []string{"turns", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd"}

func fastUsage(v string, dst *Usage) bool {
	_, ok := jsonkit.DecodeObject(v, usageKeys, func(key, v string) bool {
		switch key {
		case "turns":
			return jsonkit.DecodeInt(v, &dst.Turns)
		case "input_tokens":
			return jsonkit.DecodeInt(v, &dst.InputTokens)
		case "output_tokens":
			return jsonkit.DecodeInt(v, &dst.OutputTokens)
		case "cache_read_tokens":
			return jsonkit.DecodeInt(v, &dst.CacheReadTokens)
		case "cache_write_tokens":
			return jsonkit.DecodeInt(v, &dst.CacheWriteTokens)
		case "cost_usd":
			return jsonkit.DecodeFloat(v, &dst.CostUSD)
		}
		return true
	})
	return ok
}

// ledgerKeys are LedgerEntry's JSON names.
var ledgerKeys = []string{"kind", "anchor", "root", "at", "data"}

func fastLedger(v string, dst *[]LedgerEntry) bool {
	return jsonkit.DecodeArray(v, dst, func(v string, e *LedgerEntry) bool {
		_, ok := jsonkit.DecodeObject(v, ledgerKeys, func(key, v string) bool {
			switch key {
			case "kind":
				return jsonkit.DecodeString(v, &e.Kind)
			case "anchor":
				return jsonkit.DecodeString(v, &e.Anchor)
			case "root":
				return jsonkit.DecodeString(v, &e.Root)
			case "at":
				return jsonkit.DecodeInt(v, &e.At)
			case "data":
				return fastBytes(v, &e.Data)
			}
			return true
		})
		return ok
	})
}

// fastBytes decodes base64 data as encoding/json decodes a []byte.
func fastBytes(v string, dst *[]byte) bool {
	switch v[0] {
	case 'n':
		*dst = nil
		return true
	case '"':
	default:
		return false
	}
	s := v[1 : len(v)-1]
	if strings.IndexByte(s, '\\') >= 0 {
		return false
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(b, jsonkit.UnsafeBytes(s))
	if err != nil {
		return false
	}
	*dst = b[:n]
	return true
}

// rawSlotKeys are RawSlot's JSON names.
var rawSlotKeys = []string{"v", "data", "note", "counts"}

func fastSlots(v string, dst *Slots) bool {
	out := Slots{}
	members := 0
	isNull, ok := jsonkit.DecodeObject(v, nil, func(name, v string) bool {
		members++
		if v == "null" {
			delete(out, name)
			return true
		}
		var r RawSlot
		_, ok := jsonkit.DecodeObject(v, rawSlotKeys, func(key, v string) bool {
			switch key {
			case "v":
				return jsonkit.DecodeInt(v, &r.V)
			case "data":
				r.Data = append([]byte(nil), v...) // a RawMessage keeps null as null
			case "note":
				return jsonkit.DecodeString(v, &r.Noted)
			case "counts":
				return fastCounts(v, &r.Counted)
			}
			return true
		})
		if ok {
			out[name] = &r
		}
		return ok
	})
	switch {
	case !ok:
		return false
	case isNull || members == 0: // as Slots.UnmarshalJSON: {} is none, {"x":null} an empty set
		*dst = nil
	default:
		*dst = out
	}
	return true
}

func fastCounts(v string, dst *map[string]int64) bool {
	return jsonkit.DecodeMap(v, dst, jsonkit.DecodeInt)
}

// routeKeys are Route's JSON names.
var routeKeys = []string{"rule", "requested_model", "model", "upstream"}

func fastRoutes(v string, dst *map[string]Route) bool {
	return jsonkit.DecodeMap(v, dst, func(v string, r *Route) bool {
		_, ok := jsonkit.DecodeObject(v, routeKeys, func(key, v string) bool {
			switch key {
			case "rule":
				return jsonkit.DecodeString(v, &r.Rule)
			case "requested_model":
				return jsonkit.DecodeString(v, &r.RequestedModel)
			case "model":
				return jsonkit.DecodeString(v, &r.Model)
			case "upstream":
				return jsonkit.DecodeString(v, &r.Upstream)
			}
			return true
		})
		return ok
	})
}
