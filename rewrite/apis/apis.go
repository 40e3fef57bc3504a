// Package apis is the table of the wire APIs shepherd speaks: one
// rewrite.Descriptor per API. Adding an API is one package under rewrite/
// exporting its Descriptor and one line in all below; everything that
// depends on which APIs exist (routes, config keys, hook chains, metrics)
// reads this table.
package apis

import (
	"fmt"

	"github.com/shepherd-proxy/shepherd/rewrite"
)

// all lists the APIs in a fixed order (route classification tries their
// routes in this order).
var all = []*rewrite.Descriptor{
	rewrite.Anthropic,
	rewrite.OpenAIChat,
	rewrite.OpenAIResponses,
	rewrite.Gemini,
}

// All returns every API's descriptor, in the table's fixed order. The slice
// is a copy; the descriptors are shared and must not be modified.
func All() []*rewrite.Descriptor { return append([]*rewrite.Descriptor(nil), all...) }

// Lookup returns the descriptor whose Name is name (a config key such as
// "openai_chat"), or an error naming the known APIs.
func Lookup(name string) (*rewrite.Descriptor, error) {
	for _, d := range all {
		if d.Name == name {
			return d, nil
		}
	}
	return nil, fmt.Errorf("apis: unknown wire API %q (known: %s)", name, names())
}

// ProviderErrors returns the API whose error shape provider's clients
// expect on routes shepherd does not parse; nil when no API of the table
// names that provider.
func ProviderErrors(provider string) *rewrite.Descriptor {
	for _, d := range all {
		if d.Provider == provider && d.ProviderErrors {
			return d
		}
	}
	return nil
}

func names() string {
	s := ""
	for i, d := range all {
		if i > 0 {
			s += ", "
		}
		s += d.Name
	}
	return s
}
