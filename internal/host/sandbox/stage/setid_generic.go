//go:build linux && (arm64 || riscv64)

package stage

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// arm64 and riscv64 have only the *at calls.

var auditArch = map[string]uint32{"arm64": unix.AUDIT_ARCH_AARCH64, "riscv64": unix.AUDIT_ARCH_RISCV64}[runtime.GOARCH]

const x32Bit = 0

var setIDCalls = []setID{
	{nr: unix.SYS_FCHMOD, mode: 1, flags: -1},
	{nr: unix.SYS_FCHMODAT, mode: 2, flags: -1},
	{nr: unix.SYS_FCHMODAT2, mode: 2, flags: -1},
	{nr: unix.SYS_OPENAT, mode: 3, flags: 2},
	{nr: unix.SYS_MKNODAT, mode: 2, flags: -1},
}

var noSuchCall = []uint32{unix.SYS_OPENAT2, unix.SYS_IO_URING_SETUP}
