package agents

import (
	"os"
	"testing"
)

// TestMain removes what the tests built (the shepherd command) after them.
func TestMain(m *testing.M) {
	code := m.Run()
	removeShepherdBin()
	os.Exit(code)
}
