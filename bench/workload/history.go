package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ParseSize reads a history size: a byte count with an optional k or m
// suffix in binary units ("50k" = 51,200 B, "1m" = 1,048,576 B; "1.5m" is
// allowed). It is the nominal size HistoryTurns rounds up to whole round
// trips.
func ParseSize(s string) (int, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "k"):
		mult, t = 1<<10, strings.TrimSuffix(t, "k")
	case strings.HasSuffix(t, "m"):
		mult, t = 1<<20, strings.TrimSuffix(t, "m")
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0) || v*mult > 1<<30 {
		return 0, fmt.Errorf("history size %q: want a positive byte count up to 1 GiB, e.g. 50k or 1m", s)
	}
	return int(v * mult), nil
}

// HistoryTurns is the smallest number of tool round trips that makes
// AnthropicAgent(turns, false) at least size bytes (0 when the base request,
// system prompt, tools and task, is already that large). "50k" gives
// AgentTurns, the agent50k workload.
func HistoryTurns(size int) int {
	// Each round trip adds about 1.1 KB: bound the search by the size over
	// 512 B, then binary-search on the real lengths.
	hi := size/512 + 1
	return sort.Search(hi+1, func(n int) bool { return len(AnthropicAgent(n, false)) >= size })
}

// AgentHistory is one agent session as it resends its history: requests+1
// non-streaming Messages bodies, the first AnthropicAgent(turns) and each
// next one the previous with one more tool round trip (the messages so far
// byte for byte, then the new assistant tool_use and user tool_result), as an
// agent sends them turn after turn.
func AgentHistory(turns, requests int) [][]byte {
	out := make([][]byte, requests+1)
	for k := range out {
		out[k] = AnthropicAgent(turns+k, false)
	}
	return out
}

// VariantSession is the session id of AgentHistoryVariants' variant v:
// AgentSession with v in its last group.
func VariantSession(v int) string {
	return fmt.Sprintf("%s%012x", AgentSession[:len(AgentSession)-12], v)
}

// AgentHistoryVariants is AgentHistory for n different agents: variant v
// (from 0) has " (agent v)" appended to the task of its first user message,
// so the agents share their system prompt and tools, as agents of one
// product do, and differ from the first message on, and a session id of
// its own in its metadata (VariantSession), as each Claude Code session
// has; each variant's bodies still extend one another byte for byte.
func AgentHistoryVariants(turns, requests, n int) [][][]byte {
	base := AgentHistory(turns, requests)
	task, _ := json.Marshal(AgentTask)
	out := make([][][]byte, n)
	for v := range out {
		tagged, _ := json.Marshal(AgentTask + " (agent " + strconv.Itoa(v) + ")")
		out[v] = make([][]byte, len(base))
		session := []byte("_session_" + VariantSession(v))
		for k, b := range base {
			b = bytes.Replace(b, task, tagged, 1)
			out[v][k] = bytes.Replace(b, []byte("_session_"+AgentSession), session, 1)
		}
	}
	return out
}
