package stacktest

import "syscall"

// ownGroup is the SysProcAttr of [Service.OwnGroup]: a process group of
// its own, and SIGTERM when the parent dies.
func ownGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
