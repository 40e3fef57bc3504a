package rewrite

// AppendEvent appends one SSE event to dst: an "event:" line when name is not
// empty, one "data:" line per line of data (data is split at LF, CRLF and
// CR, so no line ending can leak into a field), and the terminating blank
// line. Lines use LF. Empty data still gives one (empty) data line, so the
// event is dispatched by clients.
func AppendEvent(dst, name, data []byte) []byte {
	if len(name) > 0 {
		dst = append(dst, "event: "...)
		dst = append(dst, name...)
		dst = append(dst, '\n')
	}
	for {
		i := 0
		for i < len(data) && data[i] != '\n' && data[i] != '\r' {
			i++
		}
		dst = append(dst, "data:"...)
		if i > 0 {
			dst = append(dst, ' ')
			dst = append(dst, data[:i]...)
		}
		dst = append(dst, '\n')
		if i == len(data) {
			break
		}
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(dst, '\n')
}

// AppendData appends a data-only SSE event (the OpenAI Chat and Gemini
// stream style) to dst; see AppendEvent.
func AppendData(dst, data []byte) []byte { return AppendEvent(dst, nil, data) }
