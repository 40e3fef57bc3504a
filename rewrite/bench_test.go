package rewrite_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/bench/workload"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/internal/apitest"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

func BenchmarkReader(b *testing.B) {
	for _, api := range apis.All() {
		b.Run(api.Name, func(b *testing.B) { benchmarkReader(b, apitest.Fixture(b, api, "stream.sse")) })
	}
}

func benchmarkReader(b *testing.B, stream []byte) {
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	r := bytes.NewReader(stream)
	for b.Loop() {
		r.Reset(stream)
		rd := rewrite.NewReader(r)
		for {
			if _, err := rd.Next(); err == io.EOF {
				break
			}
		}
	}
}

func BenchmarkDecodeStream(b *testing.B) {
	for _, api := range apis.All() {
		b.Run(api.Name, func(b *testing.B) {
			stream := apitest.Fixture(b, api, "stream.sse")
			var evs []rewrite.Event
			rd := rewrite.NewReader(bytes.NewReader(stream))
			for {
				ev, err := rd.Next()
				if err == io.EOF {
					break
				}
				e := rewrite.Event{Data: bytes.Clone(ev.Data)}
				if ev.HasData() {
					e = rewrite.DataEvent(e.Data)
				}
				e.Name = bytes.Clone(ev.Name)
				evs = append(evs, e)
			}
			b.ReportAllocs()
			for b.Loop() {
				d := apitest.CodecFor(api).NewStreamDecoder()
				for _, ev := range evs {
					_, _ = d.Decode(ev)
				}
			}
		})
	}
}

func BenchmarkParseRequest(b *testing.B) {
	for _, api := range apis.All() {
		b.Run(api.Name, func(b *testing.B) {
			body := apitest.Fixture(b, api, "request.json")
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := apitest.CodecFor(api).ParseRequest(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSideRequest is the side-request check every parsed request pays:
// one pass over the top level of the body.
func BenchmarkSideRequest(b *testing.B) {
	for _, api := range apis.All() {
		b.Run(api.Name, func(b *testing.B) {
			body := apitest.Fixture(b, api, "request.json")
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			c := apitest.CodecFor(api)
			for b.Loop() {
				rewrite.SideRequest(c, body)
			}
		})
	}
}

func BenchmarkApplyEdits(b *testing.B) {
	e := conv.RequestEdits{AddTools: allEdits.AddTools, AppendUserText: allEdits.AppendUserText}
	for _, api := range apis.All() {
		b.Run(api.Name, func(b *testing.B) {
			body := apitest.Fixture(b, api, "request.json")
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := apitest.CodecFor(api).ApplyEdits(body, e); err != nil {
					b.Fatal(err)
				}
			}
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
			apitest.ReportCPU(b, func() {
				walk(msgs, func(_ int, m gjson.Result) bool {
					walk(m.Get("content"), func(int, gjson.Result) bool { return true })
					return true
				})
			})
		})
	}
}
