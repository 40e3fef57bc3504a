package rewrite

// The wire API packages under rewrite/ import this package, so its own
// tests cannot import them. apis_test.go (package rewrite_test, which can)
// hands their descriptors in through SetTestAPIs before any test runs.
var (
	// allAPIs is every API of the table rewrite/apis, in its order.
	allAPIs []*Descriptor
	// The descriptors of packages rewrite/anthropic, rewrite/openaichat,
	// rewrite/responses and rewrite/gemini, for tests that name an API.
	Anthropic, OpenAIChat, OpenAIResponses, Gemini *Descriptor
)

// SetTestAPIs sets the descriptors this package's tests run on: all, the
// table of rewrite/apis, and the four APIs those tests name.
func SetTestAPIs(all []*Descriptor, anthropic, openaichat, responses, gemini *Descriptor) {
	allAPIs = all
	Anthropic, OpenAIChat, OpenAIResponses, Gemini = anthropic, openaichat, responses, gemini
	rounds[anthropic] = anthropicRound
	rounds[openaichat] = chatRound
	rounds[responses] = responsesRound
	rounds[gemini] = geminiRound
}
