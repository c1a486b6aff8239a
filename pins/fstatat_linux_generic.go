//go:build linux && (arm64 || riscv64)

package pins

import "syscall"

// sysFstatat is fstatat's system call number: the generic system call
// table of arm64 and riscv64 names it fstatat, not newfstatat.
const sysFstatat = syscall.SYS_FSTATAT
