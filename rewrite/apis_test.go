package rewrite_test

import (
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/anthropic"
	"github.com/shepherd-proxy/shepherd/rewrite/apis"
	"github.com/shepherd-proxy/shepherd/rewrite/gemini"
	"github.com/shepherd-proxy/shepherd/rewrite/openaichat"
	"github.com/shepherd-proxy/shepherd/rewrite/responses"
)

// init hands the API packages' descriptors to package rewrite's own tests
// (see export_test.go).
func init() {
	rewrite.SetTestAPIs(apis.All(), anthropic.Descriptor, openaichat.Descriptor, responses.Descriptor, gemini.Descriptor)
}
