//go:build linux

package stage

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A check may write files, never privileged ones: a host running as root
// shows the check's worktree to it as its own, and what it writes lands as
// root's on disk, where a setuid bit would make any local user root. The
// kernel lets an owner set the bit, so the stage asks seccomp to refuse
// every call that would: chmod, fchmod, fchmodat(2) with S_ISUID or
// S_ISGID in the mode, open, openat and creat creating a file with them,
// mknod(at) making one (no capability is needed for a regular file). A
// call that seccomp cannot read the arguments of (openat2's are behind a
// pointer; io_uring's are in shared memory) is not available at all:
// ENOSYS, as on a kernel without it, and programs fall back (libuv to
// threads, libc to openat). mkdir ignores the bits (the kernel drops them).

// setID is one call that may set a bit: its number, and which argument
// holds the mode (and the flags, for open: -1 when it always creates).
type setID struct {
	nr          uint32
	mode, flags int
}

// unavailable are the calls refused outright.
type unavailable []uint32

const (
	modeBits   = unix.S_ISUID | unix.S_ISGID
	createBits = unix.O_CREAT | 0o20000000 // __O_TMPFILE: O_TMPFILE is it and O_DIRECTORY
	retAllow   = unix.SECCOMP_RET_ALLOW
	retEPERM   = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS  = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// SetIDRefusable reports whether this architecture's calls are known to
// the filter: elsewhere the host says so and relies on nosuid and its
// private host.work.
func SetIDRefusable() bool { return auditArch != 0 }

// setIDFilter is the BPF program of the refusal.
func setIDFilter() []unix.SockFilter {
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	jset := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	// struct seccomp_data: nr at 0, arch at 4, args[i] at 16+8i (the low
	// 32 bits, on a little-endian machine, where a mode and flags fit).
	arg := func(i int) uint32 { return uint32(16 + 8*i) }
	p := []unix.SockFilter{
		ld(4),
		jeq(auditArch, 1, 0),
		ret(retENOSYS), // another ABI's calls (int 0x80 on x86-64): their numbers differ
		ld(0),
	}
	if x32Bit != 0 {
		p = append(p,
			unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: x32Bit, Jt: 0, Jf: 1},
			ret(retENOSYS))
	}
	for _, nr := range noSuchCall {
		p = append(p, jeq(nr, 0, 1), ret(retENOSYS))
	}
	for _, c := range setIDCalls {
		var block []unix.SockFilter
		if c.flags >= 0 {
			block = append(block, ld(arg(c.flags)), jset(createBits, 1, 0), ret(retAllow))
		}
		block = append(block, ld(arg(c.mode)), jset(modeBits, 0, 1), ret(retEPERM), ret(retAllow))
		p = append(p, jeq(c.nr, 0, uint8(len(block))))
		p = append(p, block...)
	}
	return append(p, ret(retAllow))
}

// refuseSetID installs the filter on this thread, which starts the check
// (no_new_privs is set: no privilege is needed).
func refuseSetID(s *Spec) error {
	if !s.RefuseSetID {
		return nil
	}
	if auditArch == 0 {
		return errors.New("this architecture's system calls are not known to the filter")
	}
	f := setIDFilter()
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	return unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0)
}
