package main

import "syscall"

// stopWithParent asks the kernel for SIGTERM when the parent process (make)
// dies, so that killing `make run` stops the stack cleanly too.
func stopWithParent() {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0)
}
