package events

// Fields is an event's data in typed form, for the events emitted on every
// request (request.started, request.finished): building and encoding a map
// of a dozen keys per event was most of the feed's cost on small requests
// (pprof under wrk, hooks off: 7.5 % of the proxy's throughput with the
// feed on). A producer sets Event.Fields instead of Event.Data.
//
// Map returns the data as Data would hold it, with the same Go types, for
// in-process readers (Recorder). The feed encodes this package's Fields
// types directly, to the JSON their Map encodes to (events/feed), so a
// reader of the feed cannot tell which form the producer used.
type Fields interface {
	Map() map[string]any
}

// RequestStartedData is request.started's data.
type RequestStartedData struct {
	Model, Agent, Side string
	Stream             bool
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
