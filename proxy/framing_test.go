package proxy

import (
	"bytes"
	"strings"
	"testing"
)

func TestCheckFraming(t *testing.T) {
	ok := []string{
		"Host: x\r\nContent-Length: 12\r\n",
		"Host: x\r\nTransfer-Encoding: chunked\r\n",
		"Host: x\r\ntransfer-encoding: Chunked\r\n",
		"Host: x\r\nContent-Length: 5, 5\r\n",
		"Host: x\r\n",
		"Host: x\r\nX-Content-Length: 1\r\nX-Transfer-Encoding: gzip\r\nContent-Length: 3\r\n",
	}
	bad := []string{
		"Content-Length: 12\r\nTransfer-Encoding: chunked\r\n",
		"Transfer-Encoding: chunked\r\nContent-Length: 12\r\n",
		"Transfer-Encoding: identity\r\n",
		"Transfer-Encoding: gzip, chunked\r\n",
		"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
		"Transfer-Encoding: chunked, chunked\r\n",
		"Transfer-Encoding: \r\n",
		"Content-Length: 5\r\nContent-Length: 6\r\n",
		"Content-Length: 5, 6\r\n",
		"Content-Length: +5\r\n",
		"Content-Length: \r\n",
	}
	for _, h := range ok {
		if msg, err := checkFraming([]byte(h)); err != nil {
			t.Errorf("checkFraming(%q) = %s; want accepted", h, msg)
		}
	}
	for _, h := range bad {
		if _, err := checkFraming([]byte(h)); err == nil {
			t.Errorf("checkFraming(%q) accepted; want refused", h)
		}
	}
}

// FuzzCheckFraming: an accepted header block never has both framing
// headers, and its Transfer-Encoding, if any, is chunked alone.
func FuzzCheckFraming(f *testing.F) {
	f.Add("Content-Length: 12\r\nTransfer-Encoding: chunked\r\n")
	f.Add("Transfer-Encoding: chunked\r\n")
	f.Add("Content-Length: 1, 1\r\n")
	f.Fuzz(func(t *testing.T, h string) {
		if _, err := checkFraming([]byte(h)); err != nil {
			return
		}
		var te, cl int
		var teValue string
		for line := range strings.SplitSeq(h, "\n") {
			name, value, found := strings.Cut(strings.TrimRight(line, "\r"), ":")
			if !found || name == "" || strings.ContainsFunc(name, func(r rune) bool { return r > 0x7e }) {
				continue // header names are ASCII; EqualFold would fold "ſ" to "s"
			}
			switch {
			case strings.EqualFold(name, "transfer-encoding"):
				te++
				teValue += value + ","
			case strings.EqualFold(name, "content-length"):
				cl++
			}
		}
		if te > 0 && cl > 0 {
			t.Fatalf("accepted both framing headers: %q", h)
		}
		if te > 0 {
			var codings [][]byte
			for tok := range bytes.SplitSeq([]byte(teValue), []byte(",")) {
				if tok = bytes.TrimSpace(tok); len(tok) > 0 {
					codings = append(codings, tok)
				}
			}
			if len(codings) != 1 || !strings.EqualFold(string(codings[0]), "chunked") {
				t.Fatalf("accepted Transfer-Encoding %q", teValue)
			}
		}
	})
}
