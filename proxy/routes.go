package proxy

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
)

// route is the classification of one incoming request.
type route struct {
	// name is the metrics/log label: a model route's name from its API's
	// descriptor (messages, count_tokens, chat_completions, responses,
	// generate_content, stream_generate_content), passthrough or not_found.
	name     string
	provider Provider
	// api is the wire API of a model route; nil for pass-through routes.
	api *rewrite.Descriptor
	// streamByPath is true for a route whose streaming is chosen by the URL
	// instead of the body (Gemini :streamGenerateContent).
	streamByPath bool
	// inspect is true when the body is a model request shepherd parses.
	inspect bool
	// noTurn marks a model route whose reply is no model turn (token
	// counting): the body is only peeked for session hints, and neither the
	// hook chain nor the turn engine runs.
	noTurn bool
	// notFound marks a path no upstream serves: it is answered 404.
	notFound bool
}

var (
	prefixV1     = []byte("/v1/")
	prefixV1beta = []byte("/v1beta/")
)

// modelRoutes are the model routes of every API of the table (apis.All),
// in its order, with the descriptor route each one matches.
var modelRoutes = buildModelRoutes()

type modelRoute struct {
	match *rewrite.Route
	route route
}

func buildModelRoutes() []modelRoute {
	var out []modelRoute
	for _, d := range apis.All() {
		for i := range d.Routes {
			r := &d.Routes[i]
			out = append(out, modelRoute{match: r, route: route{
				name: r.Name, provider: Provider(d.Provider), api: d, inspect: true, streamByPath: r.StreamByPath, noTurn: r.NoTurn,
			}})
		}
	}
	return out
}

// routeNamed returns the model route called name (the zero route when no
// API serves one by that name).
func routeNamed(name string) route {
	for _, m := range modelRoutes {
		if m.route.name == name {
			return m.route
		}
	}
	return route{}
}

// classifyHeader is classify for a parsed request header and its path:
// the headers that pick an API are read from h.
func classifyHeader(h *fasthttp.RequestHeader, path []byte) route {
	return classify(h.Method(), path, len(h.Peek("Anthropic-Version")) > 0, len(h.Peek("X-Goog-Api-Key")) > 0)
}

// classify maps method, path and a few headers to a route. Model routes are
// POSTs on the paths their API's descriptor lists (apis.All). Other paths under /v1beta/ go to Gemini;
// other paths under /v1/ go to Anthropic when the request carries an
// anthropic-version header and to OpenAI otherwise. Everything else is
// not_found. The upstream host never comes from the request.
func classify(method, path []byte, hasAnthropicVersion, hasGoogKey bool) route {
	if string(method) == "POST" {
		for i := range modelRoutes {
			if modelRoutes[i].match.Matches(path) {
				return modelRoutes[i].route
			}
		}
	}
	switch {
	case bytes.HasPrefix(path, prefixV1beta):
		return route{name: "passthrough", provider: ProviderGemini}
	case bytes.HasPrefix(path, prefixV1):
		if hasGoogKey {
			return route{name: "passthrough", provider: ProviderGemini}
		}
		if hasAnthropicVersion {
			return route{name: "passthrough", provider: ProviderAnthropic}
		}
		return route{name: "passthrough", provider: ProviderOpenAI}
	}
	return route{name: "not_found", provider: guessProvider(path, hasAnthropicVersion, hasGoogKey), notFound: true}
}

// guessProvider picks the error shape for a request shepherd cannot route.
func guessProvider(path []byte, hasAnthropicVersion, hasGoogKey bool) Provider {
	switch {
	case hasAnthropicVersion:
		return ProviderAnthropic
	case hasGoogKey || bytes.Contains(path, []byte("beta/models")):
		return ProviderGemini
	}
	return ProviderOpenAI
}

// errorAPI returns the API whose error shape a provider's clients expect
// (the descriptor table's ProviderErrors; OpenAI's for a provider no API
// names).
func errorAPI(p Provider) *rewrite.Descriptor {
	if d := apis.ProviderErrors(string(p)); d != nil {
		return d
	}
	return apis.ProviderErrors(string(ProviderOpenAI))
}
