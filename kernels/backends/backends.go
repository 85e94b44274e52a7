// Package backends registers every compute backend compiled into this
// binary with the kernels registry. A command imports it for its side
// effects and then picks a backend by name with kernels.Open (its --device
// flag), instead of importing a backend package itself:
//
//	import _ "github.com/tensorforge/forge/kernels/backends"
//
//	b, err := kernels.Open("auto", kernels.Options{})
//
// The CPU backend is always there. The CUDA backend is pure Go (the driver,
// NVRTC and cuBLASLt are loaded at run time through purego), so it is
// compiled in everywhere and reports itself unavailable, with the reason,
// where there is no NVIDIA driver or GPU. The Metal backend is pure Go
// too (Objective-C through purego) and reports itself unavailable off
// darwin. Library packages never import
// this package: which backends a binary carries is the program's choice.
package backends

import (
	// The CPU backend: always available, the correctness oracle.
	_ "github.com/tensorforge/forge/kernels/cpu"
	// The NVIDIA backend: available where libcuda, a GPU and NVRTC are.
	_ "github.com/tensorforge/forge/kernels/cuda"
	// The Apple backend: available on macOS with an Apple-silicon GPU;
	// elsewhere registered as unavailable ("not darwin").
	_ "github.com/tensorforge/forge/kernels/metal"
)
