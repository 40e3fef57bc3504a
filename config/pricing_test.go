package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPricingModels(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	require.NoError(t, os.WriteFile(file, []byte("pricing:\n  models:\n    - \"gpt-4.1 input=1.6 output=6.4\"\n    - \"my-model input=1 output=2 cache_read=0.5\"\n"), 0o600))
	c, err := Load(LoadOptions{File: file, Env: []string{}})
	require.NoError(t, err)
	require.Equal(t, []string{"gpt-4.1 input=1.6 output=6.4", "my-model input=1 output=2 cache_read=0.5"}, c.Pricing.Models)

	c, err = Load(LoadOptions{Env: []string{"SHEPHERD_PRICING_MODELS=a input=1, b output=2"}})
	require.NoError(t, err)
	require.Equal(t, []string{"a input=1", "b output=2"}, c.Pricing.Models)

	for _, bad := range []string{"a input=-1", "input=1", "a", "a tokens=3"} {
		_, err = Load(LoadOptions{Env: []string{"SHEPHERD_PRICING_MODELS=" + bad}})
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, bad)
		require.Equal(t, []string{"pricing.models"}, problemKeys(ve), bad)
	}
}
