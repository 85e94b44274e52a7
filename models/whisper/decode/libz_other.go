//go:build !(linux || darwin || freebsd || netbsd)

package decode

func libzCompressedLen([]byte) (int, bool) { return 0, false }
