//go:build !linux

package driver

// gettid has no portable counterpart; there is no CUDA driver to call off
// linux either, so a Thread never starts there.
func gettid() (int, bool) { return 0, false }
