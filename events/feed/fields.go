package feed

import (
	"strconv"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// appendFields appends an event's typed data as the JSON object its Map
// encodes to (keys sorted): the types of package events directly, any
// other through its map.
func appendFields(dst []byte, f events.Fields) ([]byte, error) {
	switch d := f.(type) {
	case *events.RequestStartedData:
		return appendRequestStarted(dst, d), nil
	case *events.RequestFinishedData:
		return appendRequestFinished(dst, d)
	default:
		return appendMap(dst, f.Map())
	}
}

func appendRequestStarted(dst []byte, d *events.RequestStartedData) []byte {
	dst = jsonkit.AppendString(append(dst, `{"agent":`...), d.Agent)
	dst = jsonkit.AppendString(append(dst, `,"model":`...), d.Model)
	dst = jsonkit.AppendString(append(dst, `,"side":`...), d.Side)
	dst = strconv.AppendBool(append(dst, `,"stream":`...), d.Stream)
	return append(dst, '}')
}

// appendRequestFinished appends d's keys in sorted order; a float JSON
// cannot hold is an error.
func appendRequestFinished(dst []byte, d *events.RequestFinishedData) ([]byte, error) {
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
