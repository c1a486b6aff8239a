package gitea

import "syscall"

// sysProcAttr asks Linux to stop Gitea if the process that started it dies
// without calling Stop (a crashed or killed test binary), so no Gitea
// outlives its test run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
