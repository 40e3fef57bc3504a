package proxy

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// The span attributes shepherd sets beside the semantic conventions'
// (docs/tracing.md). Credentials, prompts and replies are never
// attributes.
const (
	// genAISystem is gen_ai.system, which gen_ai.provider.name replaced;
	// set too, with the same value, for the backends that still read it.
	genAISystem = attribute.Key("gen_ai.system")

	attrRoute         = attribute.Key("shepherd.route")
	attrRequestID     = attribute.Key("shepherd.request_id")
	attrAgent         = attribute.Key("shepherd.agent")
	attrSide          = attribute.Key("shepherd.side")
	attrStop          = attribute.Key("shepherd.stop")
	attrRounds        = attribute.Key("shepherd.rounds")
	attrContinuations = attribute.Key("shepherd.continuations")
	attrCacheRead     = attribute.Key("shepherd.usage.cache_read_tokens")
	attrCacheWrite    = attribute.Key("shepherd.usage.cache_write_tokens")
	attrCostUSD       = attribute.Key("shepherd.cost_usd")
	attrShort         = attribute.Key("shepherd.answered_by_hook")
	attrRound         = attribute.Key("shepherd.round")
	attrRoundKind     = attribute.Key("shepherd.round.kind")
	attrPhase         = attribute.Key("shepherd.hooks.phase")
	attrHooksFailed   = attribute.Key("shepherd.hooks.failed")
	attrHook          = attribute.Key("shepherd.hook")
)

// Values of shepherd.round.kind: the agent's own request, a follow-up
// after shepherd answered the calls of a reply, a continuation of a reply
// cut by the output limit.
const (
	roundRequest      = "request"
	roundFollowUp     = "followup"
	roundContinuation = "continuation"
)

// genAIProvider is gen_ai.provider.name's value for an upstream family.
func genAIProvider(p Provider) string {
	switch p {
	case ProviderGemini:
		return "gcp.gemini"
	default:
		return string(p) // anthropic, openai: the convention's names
	}
}

// genAIOperation is gen_ai.operation.name's value for an API: Gemini's
// generateContent is generate_content, every other API's a chat.
func genAIOperation(api string) string {
	if api == "gemini" {
		return "generate_content"
	}
	return "chat"
}

// spanName is the GenAI conventions' span name, "{operation} {model}".
func spanName(op, model string) string {
	if model == "" {
		return op
	}
	return op + " " + model
}

// usageAttrs are the attributes of a reply's (or a turn's) usage.
func usageAttrs(u conv.Usage) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.GenAIUsageInputTokensKey.Int64(u.InputTokens),
		semconv.GenAIUsageOutputTokensKey.Int64(u.OutputTokens),
		attrCacheRead.Int64(u.CacheReadTokens),
		attrCacheWrite.Int64(u.CacheWriteTokens),
		semconv.GenAIUsageCacheReadInputTokensKey.Int64(u.CacheReadTokens),
		semconv.GenAIUsageCacheCreationInputTokensKey.Int64(u.CacheWriteTokens),
	}
}
