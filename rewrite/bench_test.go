package rewrite

import (
	"bytes"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/workload"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

func BenchmarkReader(b *testing.B) {
	stream := fixture(b, Anthropic, "stream.sse")
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	r := bytes.NewReader(stream)
	for b.Loop() {
		r.Reset(stream)
		rd := NewReader(r)
		for {
			if _, err := rd.Next(); err == io.EOF {
				break
			}
		}
	}
}

func BenchmarkDecodeStream(b *testing.B) {
	for _, api := range allAPIs {
		b.Run(api.Name, func(b *testing.B) {
			stream := fixture(b, api, "stream.sse")
			var evs []Event
			rd := NewReader(bytes.NewReader(stream))
			for {
				ev, err := rd.Next()
				if err == io.EOF {
					break
				}
				evs = append(evs, Event{Name: bytes.Clone(ev.Name), Data: bytes.Clone(ev.Data), hasData: ev.hasData})
			}
			b.ReportAllocs()
			for b.Loop() {
				d := codecFor(api).NewStreamDecoder()
				for _, ev := range evs {
					_, _ = d.Decode(ev)
				}
			}
		})
	}
}

func BenchmarkParseRequest(b *testing.B) {
	for _, api := range allAPIs {
		b.Run(api.Name, func(b *testing.B) {
			body := fixture(b, api, "request.json")
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := codecFor(api).ParseRequest(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSideRequest is the side-request check every parsed request pays:
// one pass over the top level of the body.
func BenchmarkSideRequest(b *testing.B) {
	for _, api := range allAPIs {
		b.Run(api.Name, func(b *testing.B) {
			body := fixture(b, api, "request.json")
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			c := codecFor(api)
			for b.Loop() {
				SideRequest(c, body)
			}
		})
	}
}

func BenchmarkApplyEdits(b *testing.B) {
	e := conv.RequestEdits{AddTools: allEdits.AddTools, AppendUserText: allEdits.AppendUserText}
	for _, api := range allAPIs {
		b.Run(api.Name, func(b *testing.B) {
			body := fixture(b, api, "request.json")
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := codecFor(api).ApplyEdits(body, e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// reportCPU adds the process CPU time per operation to a benchmark: on a
// shared machine it moves less than the wall time ns/op does.
func reportCPU(b *testing.B, run func()) {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start, n := cpu(), 0
	for b.Loop() {
		run()
		n++
	}
	b.ReportMetric(float64(cpu()-start)/float64(n), "cpu-ns/op")
}

// BenchmarkParseAgent parses the 50 KB agent request of the load bench:
// cold with the view cache off (every element decoded), warm with every
// element cached (an agent resending its history).
func BenchmarkParseAgent(b *testing.B) {
	body := workload.AnthropicAgent(30, false)
	for _, tc := range []struct {
		name   string
		budget int64
	}{{"cold", 0}, {"warm", DefaultViewCacheBytes}} {
		b.Run(tc.name, func(b *testing.B) {
			c := Anthropic.NewCodec(NewViewCache(tc.budget))
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			reportCPU(b, func() {
				if _, err := c.ParseRequest(body); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkIterateAgent walks every message and block of the agent request
// with eachElem and with gjson's ForEach.
func BenchmarkIterateAgent(b *testing.B) {
	body := workload.AnthropicAgent(30, false)
	msgs := gjson.GetBytes(body, "messages")
	walks := map[string]func(gjson.Result, func(int, gjson.Result) bool){
		"eachElem": jsonkit.EachElement,
		"gjson": func(arr gjson.Result, fn func(int, gjson.Result) bool) {
			i := 0
			arr.ForEach(func(_, v gjson.Result) bool { fn(i, v); i++; return true })
		},
	}
	for _, name := range []string{"eachElem", "gjson"} {
		walk := walks[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(msgs.Raw)))
			reportCPU(b, func() {
				walk(msgs, func(_ int, m gjson.Result) bool {
					walk(m.Get("content"), func(int, gjson.Result) bool { return true })
					return true
				})
			})
		})
	}
}
