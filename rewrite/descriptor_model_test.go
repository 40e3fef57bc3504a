package rewrite_test

import (
	"errors"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
)

// Every API reads and sets the model where its requests name it, and says
// where its credential goes.
func TestDescriptorModel(t *testing.T) {
	for _, d := range apis.All() {
		t.Run(d.Name, func(t *testing.T) {
			if d.Credential.Header == "" {
				t.Fatal("no credential header")
			}
			path := []byte("/v1/x")
			body := []byte(`{"model":"m-1","messages":[],"x":{"model":"inner"}}`)
			if d.ModelInPath {
				path = []byte("/v1beta/models/m-1:streamGenerateContent")
				body = []byte(`{"contents":[]}`)
			}
			if got := d.RequestModel(path, body); got != "m-1" {
				t.Fatalf("RequestModel = %q", got)
			}
			p2, b2, err := d.SetModel(path, body, "m-2.5")
			if err != nil {
				t.Fatal(err)
			}
			if got := d.RequestModel(p2, b2); got != "m-2.5" {
				t.Fatalf("after SetModel: %q (%s %s)", got, p2, b2)
			}
			if d.ModelInPath {
				if string(p2) != "/v1beta/models/m-2.5:streamGenerateContent" || string(b2) != string(body) {
					t.Fatalf("path %s body %s", p2, b2)
				}
				if _, _, err := d.SetModel(path, body, "a/b"); !errors.Is(err, rewrite.ErrModelName) {
					t.Fatalf("unsafe model: %v", err)
				}
				return
			}
			if string(p2) != string(path) || gjson.GetBytes(b2, "x.model").String() != "inner" || string(body) != `{"model":"m-1","messages":[],"x":{"model":"inner"}}` {
				t.Fatalf("path %s body %s (input %s)", p2, b2, body)
			}
		})
	}
}

func TestGeminiModelPathVertex(t *testing.T) {
	d, err := apis.Lookup("gemini")
	if err != nil {
		t.Fatal(err)
	}
	path := []byte("/v1/projects/p/locations/l/publishers/google/models/gemini-2.5-pro:generateContent")
	if got := d.RequestModel(path, nil); got != "gemini-2.5-pro" {
		t.Fatal(got)
	}
	p2, _, err := d.SetModel(path, nil, "gemini-2.5-flash")
	if err != nil || string(p2) != "/v1/projects/p/locations/l/publishers/google/models/gemini-2.5-flash:generateContent" {
		t.Fatal(string(p2), err)
	}
}
