package pricing

// builtin holds the public list prices of the common models, in US dollars
// per million tokens, at the standard tier: no batch discount, prompts up to
// 200K tokens where the price rises above that (Gemini Pro, Claude Sonnet
// with a 1M context), 5-minute cache writes for Anthropic. OpenAI and Gemini
// bill no cache writes (CacheWrite 0); their CacheRead is the cached-input
// price.
//
// Checked on 2026-11-25 against the providers' pricing pages
// (platform.claude.com/docs/en/about-claude/pricing,
// openai.com/api/pricing, ai.google.dev/gemini-api/docs/pricing) as quoted
// by the search corpus. Prices change: configuration (pricing.models)
// overrides or adds a model without a new build.
var builtin = map[string]Price{
	// Anthropic: cache write 1.25x input (5 minutes), cache read 0.1x.
	"claude-opus-5":     {Input: 5, Output: 25, CacheRead: 0.50, CacheWrite: 6.25},
	"claude-opus-4-8":   {Input: 5, Output: 25, CacheRead: 0.50, CacheWrite: 6.25},
	"claude-opus-4-7":   {Input: 5, Output: 25, CacheRead: 0.50, CacheWrite: 6.25},
	"claude-opus-4-6":   {Input: 5, Output: 25, CacheRead: 0.50, CacheWrite: 6.25},
	"claude-opus-4-5":   {Input: 5, Output: 25, CacheRead: 0.50, CacheWrite: 6.25},
	"claude-opus-4-1":   {Input: 15, Output: 75, CacheRead: 1.50, CacheWrite: 18.75},
	"claude-opus-4":     {Input: 15, Output: 75, CacheRead: 1.50, CacheWrite: 18.75},
	"claude-opus-4-0":   {Input: 15, Output: 75, CacheRead: 1.50, CacheWrite: 18.75},
	"claude-sonnet-4-6": {Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75},
	"claude-sonnet-4-5": {Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75},
	"claude-sonnet-4":   {Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75},
	"claude-sonnet-4-0": {Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75},
	"claude-3-7-sonnet": {Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75},
	"claude-haiku-4-5":  {Input: 1, Output: 5, CacheRead: 0.10, CacheWrite: 1.25},
	"claude-3-5-haiku":  {Input: 0.80, Output: 4, CacheRead: 0.08, CacheWrite: 1},
	"claude-3-haiku":    {Input: 0.25, Output: 1.25, CacheRead: 0.03, CacheWrite: 0.30},

	// OpenAI: CacheRead is the cached-input price.
	"gpt-5.2":            {Input: 1.75, Output: 14, CacheRead: 0.175},
	"gpt-5.1":            {Input: 1.25, Output: 10, CacheRead: 0.125},
	"gpt-5.1-codex":      {Input: 1.25, Output: 10, CacheRead: 0.125},
	"gpt-5.1-codex-max":  {Input: 1.25, Output: 10, CacheRead: 0.125},
	"gpt-5.1-codex-mini": {Input: 0.25, Output: 2, CacheRead: 0.025},
	"gpt-5":              {Input: 1.25, Output: 10, CacheRead: 0.125},
	"gpt-5-codex":        {Input: 1.25, Output: 10, CacheRead: 0.125},
	"gpt-5-mini":         {Input: 0.25, Output: 2, CacheRead: 0.025},
	"gpt-5-nano":         {Input: 0.05, Output: 0.40, CacheRead: 0.005},
	"gpt-5-pro":          {Input: 15, Output: 120},
	"gpt-4.1":            {Input: 2, Output: 8, CacheRead: 0.50},
	"gpt-4.1-mini":       {Input: 0.40, Output: 1.60, CacheRead: 0.10},
	"gpt-4.1-nano":       {Input: 0.10, Output: 0.40, CacheRead: 0.025},
	"gpt-4o":             {Input: 2.50, Output: 10, CacheRead: 1.25},
	"gpt-4o-mini":        {Input: 0.15, Output: 0.60, CacheRead: 0.075},
	"o3":                 {Input: 2, Output: 8, CacheRead: 0.50},
	"o3-mini":            {Input: 1.10, Output: 4.40, CacheRead: 0.55},
	"o4-mini":            {Input: 1.10, Output: 4.40, CacheRead: 0.275},
	"codex-mini-latest":  {Input: 1.50, Output: 6, CacheRead: 0.375},

	// Google Gemini (paid tier; Pro at prompts up to 200K tokens): CacheRead
	// is the context-caching price (storage is billed apart, not here).
	"gemini-3-pro-preview":   {Input: 2, Output: 12, CacheRead: 0.20},
	"gemini-3-flash-preview": {Input: 0.50, Output: 3, CacheRead: 0.05},
	"gemini-2.5-pro":         {Input: 1.25, Output: 10, CacheRead: 0.125},
	"gemini-2.5-flash":       {Input: 0.30, Output: 2.50, CacheRead: 0.03},
	"gemini-2.5-flash-lite":  {Input: 0.10, Output: 0.40, CacheRead: 0.01},
	"gemini-2.0-flash":       {Input: 0.10, Output: 0.40, CacheRead: 0.025},
	"gemini-2.0-flash-lite":  {Input: 0.075, Output: 0.30},
}
