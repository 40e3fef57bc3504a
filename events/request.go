package events

import (
	"strconv"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// Fields is an event's data in typed form, for the events emitted on every
// request (request.started, request.finished): building and encoding a map
// of a dozen keys per event was most of the feed's cost on small requests
// (pprof under wrk, hooks off: 7.5 % of the proxy's throughput with the
// feed on). A producer sets Event.Fields instead of Event.Data.
//
// AppendJSON appends the data as the JSON object Map's result encodes to
// (keys sorted, the feed's encoding of Data), so a reader of the feed
// cannot tell which one the producer used; it fails only on a value JSON
// cannot hold (a NaN). Map returns the same data as Data would hold it,
// with the same Go types, for in-process readers (Recorder).
type Fields interface {
	AppendJSON(dst []byte) ([]byte, error)
	Map() map[string]any
}

// Values is the event's data as a map: Data, or Fields' map when the
// producer gave Fields (nil when neither).
func (ev *Event) Values() map[string]any {
	if ev.Fields != nil {
		return ev.Fields.Map()
	}
	return ev.Data
}

// RequestStartedData is request.started's data.
type RequestStartedData struct {
	Model, Agent, Side string
	Stream             bool
}

// AppendJSON implements Fields.
func (d *RequestStartedData) AppendJSON(dst []byte) ([]byte, error) {
	dst = jsonkit.AppendString(append(dst, `{"agent":`...), d.Agent)
	dst = jsonkit.AppendString(append(dst, `,"model":`...), d.Model)
	dst = jsonkit.AppendString(append(dst, `,"side":`...), d.Side)
	dst = strconv.AppendBool(append(dst, `,"stream":`...), d.Stream)
	return append(dst, '}'), nil
}

// Map implements Fields.
func (d *RequestStartedData) Map() map[string]any {
	return map[string]any{"model": d.Model, "agent": d.Agent, "stream": d.Stream, "side": d.Side}
}

// RequestFinishedData is request.finished's data. Usage, CostUSD, Prefix
// and Error are left out of the data when absent (no turn ran, the model
// is not priced, no cache-integrity check ran, an empty Error: the
// request did not fail).
type RequestFinishedData struct {
	Status        int
	DurationMS    int64
	Model         string
	Stop          string
	Rounds        int
	Continuations int
	OverheadMS    float64
	Usage         *RequestUsage
	CostUSD       float64
	Priced        bool // CostUSD is set
	Prefix        *RequestPrefix
	Error         string
}

// RequestUsage is request.finished's usage: the turn's tokens, summed over
// its upstream replies.
type RequestUsage struct {
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
}

// RequestPrefix is request.finished's cache-integrity keys
// (docs/diagnostics.md).
type RequestPrefix struct {
	Hash        string
	BreakOffset int
	Cause       string
}

// AppendJSON implements Fields: the keys in sorted order.
func (d *RequestFinishedData) AppendJSON(dst []byte) ([]byte, error) {
	var err error
	dst = strconv.AppendInt(append(dst, `{"continuations":`...), int64(d.Continuations), 10)
	if d.Priced {
		if dst, err = jsonkit.AppendFloat(append(dst, `,"cost_usd":`...), d.CostUSD, 64); err != nil {
			return dst, err
		}
	}
	dst = strconv.AppendInt(append(dst, `,"duration_ms":`...), d.DurationMS, 10)
	if d.Error != "" {
		dst = jsonkit.AppendString(append(dst, `,"error":`...), d.Error)
	}
	dst = jsonkit.AppendString(append(dst, `,"model":`...), d.Model)
	if dst, err = jsonkit.AppendFloat(append(dst, `,"overhead_ms":`...), d.OverheadMS, 64); err != nil {
		return dst, err
	}
	if p := d.Prefix; p != nil {
		dst = jsonkit.AppendString(append(dst, `,"prefix_break_cause":`...), p.Cause)
		dst = strconv.AppendInt(append(dst, `,"prefix_break_offset":`...), int64(p.BreakOffset), 10)
		dst = jsonkit.AppendString(append(dst, `,"prefix_hash":`...), p.Hash)
	}
	dst = strconv.AppendInt(append(dst, `,"rounds":`...), int64(d.Rounds), 10)
	dst = strconv.AppendInt(append(dst, `,"status":`...), int64(d.Status), 10)
	dst = jsonkit.AppendString(append(dst, `,"stop":`...), d.Stop)
	if u := d.Usage; u != nil {
		dst = strconv.AppendInt(append(dst, `,"usage":{"cache_read_tokens":`...), u.CacheReadTokens, 10)
		dst = strconv.AppendInt(append(dst, `,"cache_write_tokens":`...), u.CacheWriteTokens, 10)
		dst = strconv.AppendInt(append(dst, `,"input_tokens":`...), u.InputTokens, 10)
		dst = strconv.AppendInt(append(dst, `,"output_tokens":`...), u.OutputTokens, 10)
		dst = append(dst, '}')
	}
	return append(dst, '}'), nil
}

// Map implements Fields.
func (d *RequestFinishedData) Map() map[string]any {
	m := map[string]any{
		"status": d.Status, "duration_ms": d.DurationMS, "model": d.Model, "stop": d.Stop,
		"rounds": d.Rounds, "continuations": d.Continuations, "overhead_ms": d.OverheadMS,
	}
	if u := d.Usage; u != nil {
		m["usage"] = map[string]any{
			"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
			"cache_read_tokens": u.CacheReadTokens, "cache_write_tokens": u.CacheWriteTokens,
		}
	}
	if d.Priced {
		m["cost_usd"] = d.CostUSD
	}
	if p := d.Prefix; p != nil {
		m["prefix_hash"], m["prefix_break_offset"], m["prefix_break_cause"] = p.Hash, p.BreakOffset, p.Cause
	}
	if d.Error != "" {
		m["error"] = d.Error
	}
	return m
}
