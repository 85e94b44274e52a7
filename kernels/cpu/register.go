package cpu

import (
	"fmt"

	"github.com/tensorforge/forge/kernels"
)

// The CPU backend is always available; every other backend ranks above it
// for "auto" when it can run.
func init() {
	kernels.Register(kernels.Registration{
		Name: "cpu",
		Open: func(o kernels.Options) (kernels.Backend, error) {
			if o.Precision != kernels.InvalidDType && o.Precision != kernels.F32 {
				return nil, fmt.Errorf("cpu: %s products are for GPU backends; the CPU backend computes in f32 (models choose their own bfloat16 and int8 paths)", o.Precision)
			}
			return NewWithPackDir(o.PackDir), nil
		},
		Rank: 0,
	})
}
