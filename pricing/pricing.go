// Package pricing turns token usage into list-price cost: a table of
// per-model prices (the common models' public list prices, built in, and
// overridable in configuration) looked up by model name.
package pricing

import "github.com/shepherd-proxy/shepherd/rewrite/conv"

// Price is a model's list price in US dollars per million tokens.
type Price struct {
	Input      float64 `mapstructure:"input" json:"input"`
	Output     float64 `mapstructure:"output" json:"output"`
	CacheRead  float64 `mapstructure:"cache_read" json:"cache_read"`
	CacheWrite float64 `mapstructure:"cache_write" json:"cache_write"`
}

// Table maps model names to prices. The zero Table prices nothing. It is
// read-only once built and safe for concurrent use.
type Table struct {
	prices map[string]Price
}

// Cost returns the cost of u at model's price, and whether the model has
// a price (an unknown model costs 0).
func (t *Table) Cost(model string, u conv.Usage) (usd float64, known bool) {
	if t == nil {
		return 0, false
	}
	p, ok := t.prices[model]
	if !ok {
		return 0, false
	}
	const perTok = 1e-6
	return perTok * (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.CacheRead + float64(u.CacheWriteTokens)*p.CacheWrite), true
}
