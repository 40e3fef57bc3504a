package rewrite

import (
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
	"github.com/tidwall/gjson"
)

// SessionHints are the few request fields the pass-through path reads:
// whether the agent asked for a stream, and the session hints of the body.
type SessionHints struct {
	Stream         bool
	MetadataUserID string // Anthropic metadata.user_id
	PromptCacheKey string // OpenAI prompt_cache_key
}

// checkKind checks that v, the member field, has kind k.
func checkKind(k JSONKind, v gjson.Result, field string) error {
	switch k {
	case KindString:
		return WantString(v, field)
	case KindNumber:
		return WantNumber(v, field)
	case KindBool:
		return WantBool(v, field)
	case KindArray:
		return WantArray(v, field)
	case KindObject:
		return WantObject(v, field)
	case KindStringOrArray:
		return WantStringOrArray(v, field)
	}
	return nil
}

// PeekRequest validates body as a JSON object of api's request shape and
// reads the session hints (api.TopLevel lists the members checked), without building the full view (ParseRequest
// costs several times more on a long conversation). It checks the JSON type
// of the API's top-level members and of the members it reads; the content
// of messages is left to the upstream. Errors wrap ErrMalformed and name the
// field, as ParseRequest's do.
func PeekRequest(api *Descriptor, body []byte) (SessionHints, error) {
	return PeekRequestWith(nil, api, body)
}

// PeekRequestWith is PeekRequest through views' index memo (ParseBody,
// keyed by the API's conversation): a body that extends one seen before is
// validated from where they differ, and the members are read from the
// index instead of a second walk. A nil views validates whole.
func PeekRequestWith(views *ViewCache, api *Descriptor, body []byte) (SessionHints, error) {
	var h SessionHints
	b, err := ParseBody(views, body, api.Conversation)
	if err != nil {
		return h, err
	}
	b.Release()
	idx := b.Idx
	checks := api.TopLevel
	idx.EachMember(func(k string, v gjson.Result) bool {
		err = peekMember(&h, checks, k, v)
		return err == nil
	})
	return h, err
}

// peekMember checks one top-level member k of a request and reads the
// session hints it holds into h.
func peekMember(h *SessionHints, checks map[string]JSONKind, k string, v gjson.Result) error {
	if kind, ok := checks[k]; ok {
		if err := checkKind(kind, v, k); err != nil {
			return err
		}
	}
	var err error
	switch k {
	case "stream":
		if err = WantBool(v, "stream"); err == nil {
			h.Stream = v.Type == gjson.True
		}
	case "metadata":
		if err = WantObject(v, "metadata"); err == nil {
			uid := v.Get("user_id")
			if err = WantString(uid, "metadata.user_id"); err == nil {
				h.MetadataUserID = jsonkit.OwnedString(uid)
			}
		}
	case "prompt_cache_key":
		if err = WantString(v, "prompt_cache_key"); err == nil {
			h.PromptCacheKey = jsonkit.OwnedString(v)
		}
	}
	return err
}
