package metal

import "github.com/tensorforge/forge/kernels"

// The Metal backend ranks with the CUDA one for "auto" (no machine has
// both): on a Mac with a Metal device it is picked over the CPU.
func init() {
	kernels.Register(kernels.Registration{
		Name:  "metal",
		Open:  func(o kernels.Options) (kernels.Backend, error) { return open(o) },
		Probe: probe,
		Rank:  10,
	})
}
