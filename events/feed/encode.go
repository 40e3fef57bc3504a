package feed

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// appendEvent appends ev as one JSON object to dst: the fields of
// events.Event in their declared order under their json names (id,
// route, request_id and data left out when empty), at as RFC 3339 with
// nanoseconds, and data's keys sorted, which is the document encoding/json
// writes for it, read the same by any JSON parser (typed Fields too:
// appendFields). Strings
// are escaped by jsonkit.AppendString (invalid UTF-8 becomes U+FFFD; HTML
// characters are not escaped).
//
// It is hand-written because the feed encodes every request's events on
// the proxy's cores: encoding/json's reflection and sorting of the data
// map were 10 % of the proxy's CPU on small requests (pprof under wrk).
// The data values producers use (strings, bools, integers, floats, times,
// string slices and nested maps) are encoded here; any other value goes
// through encoding/json. A value JSON cannot hold (a NaN, an unsupported
// type) is an error and dst is then unspecified.
func appendEvent(dst []byte, ev *events.Event) ([]byte, error) {
	dst = append(dst, '{')
	if ev.ID != "" {
		dst = jsonkit.AppendString(append(dst, `"id":`...), ev.ID)
		dst = append(dst, ',')
	}
	dst = jsonkit.AppendString(append(dst, `"type":`...), string(ev.Type))
	dst = append(dst, `,"at":`...)
	var err error
	if dst, err = jsonkit.AppendTime(dst, ev.At); err != nil {
		return dst, err
	}
	dst = jsonkit.AppendString(append(dst, `,"session":`...), ev.Session)
	dst = jsonkit.AppendString(append(dst, `,"tenant":`...), ev.Tenant)
	if ev.Route != "" {
		dst = jsonkit.AppendString(append(dst, `,"route":`...), ev.Route)
	}
	if ev.RequestID != "" {
		dst = jsonkit.AppendString(append(dst, `,"request_id":`...), ev.RequestID)
	}
	switch {
	case ev.Fields != nil:
		if dst, err = appendFields(append(dst, `,"data":`...), ev.Fields); err != nil {
			return dst, err
		}
	case len(ev.Data) > 0:
		if dst, err = appendMap(append(dst, `,"data":`...), ev.Data); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendMap appends m with its keys sorted. The members are sorted as
// key-value pairs, so that no value is looked up again by its key.
func appendMap[V any](dst []byte, m map[string]V) ([]byte, error) {
	type member struct {
		k string
		v V
	}
	var stack [16]member
	members := stack[:0]
	for k, v := range m {
		members = append(members, member{k, v})
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.k, b.k) })
	dst = append(dst, '{')
	var err error
	for i, mb := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(jsonkit.AppendString(dst, mb.k), ':')
		if dst, err = appendValue(dst, mb.v); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendValue appends v as encoding/json would.
func appendValue(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return jsonkit.AppendString(dst, v), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case uint32:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint64:
		return strconv.AppendUint(dst, v, 10), nil
	case float64:
		return jsonkit.AppendFloat(dst, v, 64)
	case float32:
		return jsonkit.AppendFloat(dst, float64(v), 32)
	case time.Time:
		return jsonkit.AppendTime(dst, v)
	case []string:
		if v == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, s := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonkit.AppendString(dst, s)
		}
		return append(dst, ']'), nil
	case []any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		var err error
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendValue(dst, e); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), nil
		}
		return appendMap(dst, v)
	case map[string]string:
		if v == nil {
			return append(dst, "null"...), nil
		}
		return appendMap(dst, v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return dst, err
		}
		return append(dst, b...), nil
	}
}
