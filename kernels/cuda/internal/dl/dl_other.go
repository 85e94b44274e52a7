//go:build !linux

package dl

import (
	"errors"
	"runtime"
)

// errPlatform is what every load reports where the NVIDIA libraries do not
// exist (purego can open libraries on macOS, but there is no CUDA there).
var errPlatform = errors.New("the CUDA libraries exist only on linux, not " + runtime.GOOS)

func dlopen(string) (uintptr, error)         { return 0, errPlatform }
func dlsym(uintptr, string) (uintptr, error) { return 0, errPlatform }
