package config

import "github.com/shepherd-proxy/shepherd/pricing"

// Pricing configures the prices that turn a session's token usage into its
// cost (docs/usage.md).
type Pricing struct {
	// Models: key pricing.models; rules that override or add model prices
	// over the built-in table of the common models' list prices, applied
	// in order, each "<model> input=<usd> output=<usd> cache_read=<usd>
	// cache_write=<usd>" in US dollars per million tokens (fields may be
	// left out: a built-in model keeps its built-in price for them, another
	// model gets 0). Default none. Model names are matched as the built-in
	// ones are: exactly, then without a date suffix, then by the longest
	// name the model extends ("-" and a suffix not starting with a digit).
	// The list form rather than a mapping keyed by model: model names hold
	// dots (gpt-4.1), which the configuration loader reads as nesting.
	Models []string `mapstructure:"models"`
}

func (c *Pricing) validate(p *problems) {
	for _, r := range c.Models {
		if _, _, err := pricing.ParseRule(r); err != nil {
			p.add("pricing.models", "%v", err)
		}
	}
}
