package driver

import "golang.org/x/sys/unix"

// gettid returns the calling OS thread's id.
func gettid() (int, bool) { return unix.Gettid(), true }
