//go:build linux && !arm64 && !riscv64

package pins

import "syscall"

// sysFstatat is fstatat's system call number, named newfstatat on amd64 and
// the other architectures with the older system call table.
const sysFstatat = syscall.SYS_NEWFSTATAT
