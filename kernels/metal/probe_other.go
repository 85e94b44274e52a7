//go:build !darwin

package metal

import (
	"errors"
	"runtime"

	"github.com/tensorforge/forge/kernels"
)

// errNotDarwin is why the backend cannot run on this system: Metal is
// Apple's API, present on macOS only.
var errNotDarwin = errors.New("not darwin: Metal runs on macOS only, this is " + runtime.GOOS)

// probe says why Metal cannot run here.
func probe() error { return errNotDarwin }

// open fails with probe's reason.
func open(kernels.Options) (kernels.Backend, error) {
	return nil, errNotDarwin
}
