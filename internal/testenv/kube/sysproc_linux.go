package kube

import "syscall"

// sysProcAttr kills a component when the thread that started it exits (see
// spawn), so no control plane outlives a crashed test binary.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
