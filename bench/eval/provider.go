package eval

import (
	"fmt"
	"strings"

	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/test/kit"
)

// Provider is where the model runs: a real provider reached with a key,
// or the scripted mock (Live false).
type Provider struct {
	Live bool
	// API is the wire API a live run speaks (kit driver name).
	API string
	// Key is the provider credential (never logged or reported).
	Key string `json:"-"`
	// BaseURL is the provider's base URL (no /v1).
	BaseURL string
	// Model is the model a live run asks for.
	Model string
}

// MockNote is what a report says of a run against the mock.
const MockNote = "mock (no key set): scores check the harness, not a model"

// Describe is the provider line of a report.
func (p Provider) Describe() string {
	if !p.Live {
		return MockNote
	}
	return fmt.Sprintf("%s live (model %s at %s): scores are the model's behaviour through shepherd", p.API, p.Model, p.BaseURL)
}

// liveAPI is how one wire API is reached live: the key's environment
// variable, the base URL's variable and default, and a default model.
type liveAPI struct {
	api, keyEnv, urlEnv, url, model string
}

// liveAPIs lists the APIs a key can run, in the order Detect tries them.
var liveAPIs = []liveAPI{
	{"anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", config.Defaults().Upstreams.Anthropic, "claude-haiku-4-5"},
	{"openai_chat", "OPENAI_API_KEY", "OPENAI_BASE_URL", config.Defaults().Upstreams.OpenAI, "gpt-4.1-mini"},
	{"openai_responses", "OPENAI_API_KEY", "OPENAI_BASE_URL", config.Defaults().Upstreams.OpenAI, "gpt-4.1-mini"},
	{"gemini", "GEMINI_API_KEY", "GEMINI_BASE_URL", config.Defaults().Upstreams.Gemini, "gemini-2.5-flash"},
}

// Detect picks the provider from the environment (getenv): for api (a kit
// driver name, or "" for the first API whose key is set), a live provider
// when its key is set, else the mock. model and baseURL override the
// defaults when not empty.
func Detect(getenv func(string) string, api, model, baseURL string) (Provider, error) {
	if api != "" {
		if _, ok := kit.Lookup(api); !ok {
			return Provider{}, fmt.Errorf("eval: unknown API %q (anthropic, openai_chat, openai_responses, gemini)", api)
		}
	}
	for _, l := range liveAPIs {
		if (api != "" && l.api != api) || getenv(l.keyEnv) == "" {
			continue
		}
		p := Provider{Live: true, API: l.api, Key: getenv(l.keyEnv), BaseURL: l.url, Model: l.model}
		if u := getenv(l.urlEnv); u != "" {
			p.BaseURL = u
		}
		if baseURL != "" {
			p.BaseURL = baseURL
		}
		p.BaseURL = trimVersion(p.BaseURL)
		if model != "" {
			p.Model = model
		}
		return p, nil
	}
	return Provider{API: api}, nil
}

// trimVersion drops a trailing /v1 or /v1beta: SDK base URLs often carry
// it, shepherd's upstreams do not.
func trimVersion(u string) string {
	u = strings.TrimSuffix(u, "/")
	for _, v := range []string{"/v1beta", "/v1"} {
		u = strings.TrimSuffix(u, v)
	}
	return u
}

// credentials are d's request headers with the test credentials replaced
// by key.
func credentials(d kit.Driver, key string) map[string]string {
	h := d.Headers()
	for k := range h {
		switch strings.ToLower(k) {
		case "authorization":
			h[k] = "Bearer " + key
		case "x-api-key", "x-goog-api-key":
			h[k] = key
		}
	}
	return h
}
