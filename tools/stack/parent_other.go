//go:build !linux

package main

// stopWithParent: only Linux can tie this process's life to its parent's.
func stopWithParent() {}
