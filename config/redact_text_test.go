package config

import (
	"strings"
	"testing"
	"unicode"
)

func TestRedactText(t *testing.T) {
	const secret = "SENTINELsecret123"
	cases := []string{
		"x-api-key: " + secret,
		`"POST /v1/messages HTTP/1.1\r\nX-Api-Key: ` + secret + `\r\nHost: a\r\n"`,
		"Authorization: Bearer " + secret,
		"authorization=Bearer " + secret,
		"x-goog-api-key:" + secret,
		`{"x-api-key":"` + secret + `"}`,
		"GET /v1beta/models/x:generateContent?alt=sse&key=" + secret + " HTTP/1.1",
		"https://host/path?key=" + secret + "&alt=sse",
		"redis://user:" + secret + "@host:6379/0",
		"token was bearer " + secret + " ok",
		"sk-ant-api03-" + secret,
		"AIzaSyA" + secret + "abcdefghijklmnop",
	}
	for _, c := range cases {
		got := RedactText(c)
		if strings.Contains(got, secret) {
			t.Errorf("RedactText(%q) = %q: secret kept", c, got)
		}
		if !strings.Contains(got, Mask) {
			t.Errorf("RedactText(%q) = %q: no mask", c, got)
		}
	}
	for _, keep := range []string{"upstream unreachable", "key=value pairs", "route=messages status=502", "monkey: business"} {
		if got := RedactText(keep); got != keep {
			t.Errorf("RedactText(%q) = %q: changed a text without credentials", keep, got)
		}
	}
}

func TestMaskQuoted(t *testing.T) {
	cases := map[string]string{
		`invalid header value "sk-\x01"`:             `invalid header value "***"`,
		`error when serving "a"<->"b": x "y\"z" end`: `error when serving "***"<->"***": x "***" end`,
		`no quotes`:         `no quotes`,
		`unterminated "abc`: `unterminated "***`,
	}
	for in, want := range cases {
		if got := MaskQuoted(in); got != want {
			t.Errorf("MaskQuoted(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzRedactText(f *testing.F) {
	f.Add("x-api-key: abc", "abc")
	f.Add("?key=abc&x=1", "abc")
	f.Fuzz(func(t *testing.T, prefix, secret string) {
		// A credential is printable and has no separators.
		if len(secret) < 4 || strings.ContainsAny(secret, "\"\\&#;=:/@?") ||
			strings.IndexFunc(secret, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
			return
		}
		for _, tmpl := range []string{"x-api-key: %s", "Authorization: Bearer %s", "GET /p?key=%s HTTP/1.1"} {
			in := prefix + "\n" + strings.Replace(tmpl, "%s", secret, 1)
			if strings.Contains(prefix, secret) {
				return
			}
			if got := RedactText(in); strings.Contains(got, secret) {
				t.Fatalf("RedactText(%q) = %q keeps the secret", in, got)
			}
		}
		_ = MaskQuoted(prefix)
	})
}
