package rewrite

import (
	"bytes"
	"io"
	"testing"

	"shepherd/hooks"
)

func BenchmarkReader(b *testing.B) {
	stream := fixture(b, APIAnthropic, "stream.sse")
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
		b.Run(string(api), func(b *testing.B) {
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
				d := For(api).NewStreamDecoder()
				for _, ev := range evs {
					_, _ = d.Decode(ev)
				}
			}
		})
	}
}

func BenchmarkParseRequest(b *testing.B) {
	for _, api := range allAPIs {
		b.Run(string(api), func(b *testing.B) {
			body := fixture(b, api, "request.json")
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := For(api).ParseRequest(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkApplyEdits(b *testing.B) {
	e := hooks.RequestEdits{AddTools: allEdits.AddTools, AppendUserText: allEdits.AppendUserText}
	for _, api := range allAPIs {
		b.Run(string(api), func(b *testing.B) {
			body := fixture(b, api, "request.json")
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := For(api).ApplyEdits(body, e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
