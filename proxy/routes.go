package proxy

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"github.com/shepherd-proxy/shepherd/rewrite"
)

// route is the classification of one incoming request.
type route struct {
	// name is the metrics/log label: messages, count_tokens, chat_completions,
	// responses, generate_content, stream_generate_content, passthrough,
	// not_found.
	name     string
	provider Provider
	// api is the codec of a model route; "" for pass-through routes.
	api rewrite.API
	// streamByPath is true for Gemini :streamGenerateContent, whose
	// streaming is chosen by the URL instead of the body.
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
	pathMessages    = []byte("/v1/messages")
	pathCountTokens = []byte("/v1/messages/count_tokens")
	pathChat        = []byte("/v1/chat/completions")
	pathResponses   = []byte("/v1/responses")
	prefixV1        = []byte("/v1/")
	prefixV1beta    = []byte("/v1beta/")
	suffixGenerate  = []byte(":generateContent")
	suffixStreamGen = []byte(":streamGenerateContent")
	modelsSegment   = []byte("/models/")
)

var (
	routeMessages    = route{name: "messages", provider: ProviderAnthropic, api: rewrite.APIAnthropic, inspect: true}
	routeCountTokens = route{name: "count_tokens", provider: ProviderAnthropic, api: rewrite.APIAnthropic, inspect: true, noTurn: true}
	routeChat        = route{name: "chat_completions", provider: ProviderOpenAI, api: rewrite.APIOpenAIChat, inspect: true}
	routeResponses   = route{name: "responses", provider: ProviderOpenAI, api: rewrite.APIOpenAIResponses, inspect: true}
	routeGenerate    = route{name: "generate_content", provider: ProviderGemini, api: rewrite.APIGemini, inspect: true}
	routeStreamGen   = route{name: "stream_generate_content", provider: ProviderGemini, api: rewrite.APIGemini, inspect: true, streamByPath: true}
)

// classifyHeader is classify for a parsed request header and its path:
// the headers that pick an API are read from h.
func classifyHeader(h *fasthttp.RequestHeader, path []byte) route {
	return classify(h.Method(), path, len(h.Peek("Anthropic-Version")) > 0, len(h.Peek("X-Goog-Api-Key")) > 0)
}

// classify maps method, path and a few headers to a route. Model routes are
// POSTs on the documented paths. Other paths under /v1beta/ go to Gemini;
// other paths under /v1/ go to Anthropic when the request carries an
// anthropic-version header and to OpenAI otherwise. Everything else is
// not_found. The upstream host never comes from the request.
func classify(method, path []byte, hasAnthropicVersion, hasGoogKey bool) route {
	post := string(method) == "POST"
	if post {
		switch {
		case bytes.Equal(path, pathMessages):
			return routeMessages
		case bytes.Equal(path, pathCountTokens):
			return routeCountTokens
		case bytes.Equal(path, pathChat):
			return routeChat
		case bytes.Equal(path, pathResponses):
			return routeResponses
		}
		if (bytes.HasPrefix(path, prefixV1beta) || bytes.HasPrefix(path, prefixV1)) && bytes.Contains(path, modelsSegment) {
			switch {
			case bytes.HasSuffix(path, suffixGenerate):
				return routeGenerate
			case bytes.HasSuffix(path, suffixStreamGen):
				return routeStreamGen
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

// errorAPI returns the codec whose error shape a provider's clients expect.
func errorAPI(p Provider) rewrite.API {
	switch p {
	case ProviderAnthropic:
		return rewrite.APIAnthropic
	case ProviderGemini:
		return rewrite.APIGemini
	}
	return rewrite.APIOpenAIChat
}
