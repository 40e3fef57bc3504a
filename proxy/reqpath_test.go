package proxy

import (
	"net/url"
	"path"
	"strings"
	"testing"
)

func TestCheckRequestPath(t *testing.T) {
	ok := []string{
		"/", "/v1/messages", "/v1/messages/count_tokens", "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
		"/v1/models/", "/v1/files/file-abc.json", "/v1/a..b/c.d", "/v1/%41bc", "/v1/x%20y", "/v1/...", "/v1/.x",
	}
	bad := []string{
		"", "v1/messages", "/v1beta/../../x", "/v1/..", "/v1/.", "/./v1", "/v1//messages", "//v1/messages",
		"/v1/%2e%2e/x", "/v1/%2E%2E/x", "/v1/%2E./x", "/v1/.%2e/x", "/v1/a%2fb", "/v1/a%2Fb", "/v1/a%5cb",
		"/v1/a%5Cb", "/v1/a\\b", "/v1/..\\x", "/v1/%2e", "/v1/x%2e",
	}
	for _, p := range ok {
		if err := checkRequestPath([]byte(p)); err != nil {
			t.Errorf("checkRequestPath(%q) = %v; want accepted", p, err)
		}
	}
	for _, p := range bad {
		if err := checkRequestPath([]byte(p)); err == nil {
			t.Errorf("checkRequestPath(%q) accepted; want refused", p)
		}
	}
}

// FuzzCheckRequestPath holds the checker to its contract: an accepted path,
// however the upstream decodes it (once), names a location under the
// upstream's prefix, with no dot-segment, empty segment or backslash.
func FuzzCheckRequestPath(f *testing.F) {
	for _, s := range []string{"/v1/messages", "/v1beta/../x", "/v1/%2e%2e/", "/a\\b", "//x", "/%252e%252e/x", "/v1/%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if checkRequestPath([]byte(p)) != nil {
			return
		}
		if !strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
			t.Fatalf("accepted %q", p)
		}
		decoded, err := url.PathUnescape(p)
		if err != nil {
			return // the upstream refuses it
		}
		if strings.Contains(decoded, "\\") {
			t.Fatalf("accepted %q: decodes to a backslash", p)
		}
		segs := strings.Split(decoded[1:], "/")
		for i, seg := range segs {
			if seg == "." || seg == ".." || (seg == "" && i < len(segs)-1) {
				t.Fatalf("accepted %q: decodes to segment %q in %q", p, seg, decoded)
			}
		}
		if j := path.Join("/base", decoded); j != "/base" && !strings.HasPrefix(j, "/base/") {
			t.Fatalf("accepted %q: resolves to %q outside /base", p, j)
		}
	})
}
