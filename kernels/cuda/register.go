package cuda

import (
	"fmt"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cuda/driver"
	"github.com/tensorforge/forge/kernels/cuda/nvrtc"
)

// The CUDA backend ranks above the CPU for "auto" wherever a driver, a GPU
// and NVRTC are present.
func init() {
	kernels.Register(kernels.Registration{
		Name: "cuda",
		Open: func(o kernels.Options) (kernels.Backend, error) { return New(o) },
		Probe: func() error {
			if _, err := driver.Load(); err != nil {
				return err
			}
			if _, err := nvrtc.Default(); err != nil {
				return fmt.Errorf("NVRTC (the CUDA runtime compiler) is missing: %w", err)
			}
			return nil
		},
		Rank: 10,
	})
}
