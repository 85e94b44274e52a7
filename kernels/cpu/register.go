package cpu

import "github.com/tensorforge/forge/kernels"

// The CPU backend is always available; every other backend ranks above it
// for "auto" when it can run.
func init() {
	kernels.Register(kernels.Registration{
		Name: "cpu",
		Open: func(kernels.Options) (kernels.Backend, error) { return New(), nil },
		Rank: 0,
	})
}
