package kit

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes cmd get SIGKILL when the test process dies, so a
// crashed or killed test leaves no servers behind.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
