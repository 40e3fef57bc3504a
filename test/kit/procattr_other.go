//go:build !linux

package kit

import "os/exec"

// dieWithTest is a no-op where the parent's death cannot be signalled.
func dieWithTest(*exec.Cmd) {}
