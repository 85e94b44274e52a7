//go:build linux || darwin || freebsd || netbsd

package decode

import (
	"runtime"
	"sync"

	"github.com/ebitengine/purego"
)

// libz is the system zlib, bound on first use through purego (no cgo). It
// is the package's only shared state: a read-only library handle, set once.
var libz struct {
	once      sync.Once
	ok        bool
	compress2 func(dst *byte, dstLen *uintptr, src *byte, srcLen uintptr, level int32) int32
	bound     func(srcLen uintptr) uintptr
}

func libzNames() []string {
	if runtime.GOOS == "darwin" {
		return []string{"/usr/lib/libz.1.dylib", "libz.1.dylib", "libz.dylib"}
	}
	return []string{"libz.so.1", "libz.so"}
}

// libzCompressedLen returns the length of zlib's compress2(b, level 6), the
// stream CPython's zlib.compress(b) makes; ok is false without libz.
func libzCompressedLen(b []byte) (n int, ok bool) {
	libz.once.Do(func() {
		for _, name := range libzNames() {
			h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
			if err != nil {
				continue
			}
			c2, err1 := purego.Dlsym(h, "compress2")
			cb, err2 := purego.Dlsym(h, "compressBound")
			if err1 != nil || err2 != nil {
				continue
			}
			purego.RegisterFunc(&libz.compress2, c2)
			purego.RegisterFunc(&libz.bound, cb)
			libz.ok = true
			return
		}
	})
	if !libz.ok || len(b) == 0 {
		return 0, false
	}
	dst := make([]byte, libz.bound(uintptr(len(b))))
	dstLen := uintptr(len(dst))
	const zOK, level = 0, 6
	if libz.compress2(&dst[0], &dstLen, &b[0], uintptr(len(b)), level) != zOK {
		return 0, false
	}
	return int(dstLen), true
}
