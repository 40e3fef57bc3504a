package kit

import "strings"

// Event is one server-sent event: its event name ("" without one) and its
// data lines joined by "\n".
type Event struct{ Name, Data string }

// SSE splits a raw event stream into events (LF or CRLF framing); blocks
// without data (comments, keep-alives) are skipped.
func SSE(b []byte) []Event {
	s := strings.ReplaceAll(string(b), "\r\n", "\n")
	var out []Event
	for _, block := range strings.Split(s, "\n\n") {
		var ev Event
		var data []string
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event:"):
				ev.Name = strings.TrimSpace(line[len("event:"):])
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(line[len("data:"):], " "))
			}
		}
		if len(data) == 0 {
			continue
		}
		ev.Data = strings.Join(data, "\n")
		out = append(out, ev)
	}
	return out
}
