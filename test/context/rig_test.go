package context_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// TestRigAppendOnly: with every context feature off, each API's upstream
// view grows append-only over a three-turn session (the property the
// features' own tests check with them on), and PrefixBreak sees a changed
// history.
func TestRigAppendOnly(t *testing.T) {
	for _, d := range kit.Drivers() {
		t.Run(d.Name(), func(t *testing.T) {
			r := newRig(t, rigOptions{})
			a := kit.NewAgent(d, r.URL, map[string]string{"X-Session-Id": "rig-" + d.Name()})
			for i := range 3 {
				r.Mock.Script(mock.Reply{Text: fmt.Sprintf("answer %d", i)})
				a.User(fmt.Sprintf("question %d", i))
				reply, resp, body := a.Send(t)
				require.Equal(t, 200, resp.StatusCode, string(body))
				a.History = append(a.History, a.D.Echo(body)...)
				require.Equal(t, fmt.Sprintf("answer %d", i), reply.Text)
			}
			bodies := r.upstreamBodies()
			require.Len(t, bodies, 3)
			for i := 1; i < len(bodies); i++ {
				require.Equal(t, -1, kit.PrefixBreak(d, bodies[i-1], bodies[i]), "request %d extends request %d", i, i-1)
			}
			first := len(gjson.GetBytes(bodies[0], d.HistoryPath()).Array())
			require.Equal(t, first, kit.PrefixBreak(d, bodies[2], bodies[0]), "the first request lacks the later messages")
		})
	}
}
