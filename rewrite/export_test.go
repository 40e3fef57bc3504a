package rewrite

// The wire API packages under rewrite/ import this package, so its own
// tests cannot import them. apis_test.go (package rewrite_test, which can)
// hands their descriptors in through SetTestAPIs before any test runs.
var (
	// allAPIs is every API of the table rewrite/apis, in its order.
	allAPIs []*Descriptor
	// Gemini is the descriptor of package rewrite/gemini.
	Gemini *Descriptor
	// OpenAIChat is the descriptor of package rewrite/openaichat.
	OpenAIChat *Descriptor
	// OpenAIResponses is the descriptor of package rewrite/responses.
	OpenAIResponses *Descriptor
	// Anthropic is the descriptor of package rewrite/anthropic.
	Anthropic *Descriptor
	// movedRounds are the longConversation rounds of the APIs whose codecs
	// live in packages of their own.
	movedRounds = map[*Descriptor]func(i int, id string) []string{}
)

// SetTestAPIs sets the descriptors this package's tests run on: all, the
// table of rewrite/apis, and the APIs those tests name.
func SetTestAPIs(all []*Descriptor, anthropic *Descriptor, responses *Descriptor, openaichat *Descriptor, gemini *Descriptor) {
	OpenAIChat = openaichat
	movedRounds[openaichat] = chatRound
	OpenAIResponses = responses
	movedRounds[responses] = responsesRound
	Anthropic = anthropic
	movedRounds[anthropic] = anthropicRound
	allAPIs, Gemini = all, gemini
	movedRounds[gemini] = geminiRound
}
