// Package backends registers every compute backend compiled into this
// binary with the kernels registry. A command imports it for its side
// effects and then picks a backend by name with kernels.Open (its --device
// flag), instead of importing a backend package itself:
//
//	import _ "github.com/tensorforge/forge/kernels/backends"
//
//	b, err := kernels.Open("auto", kernels.Options{})
//
// Today that is kernels/cpu only. The GPU backends, kernels/cuda and
// kernels/metal, are added here as blank imports when they are written
// (behind a build tag or a GOOS file where their platform demands it), so
// that every command offers them at once. Library packages never import
// this package: which backends a binary carries is the program's choice.
package backends

import (
	// The CPU backend: always available, the correctness oracle.
	_ "github.com/tensorforge/forge/kernels/cpu"
)
