//go:build !linux

package stacktest

import "syscall"

// ownGroup is the SysProcAttr of [Service.OwnGroup]: a process group of
// its own.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
