// Package backendflag is how Forge's commands choose the compute backend
// their models run on: the --device flag, else $FORGE_DEVICE, else "auto"
// (the best backend that can run here). It checks the choice against the
// kernels registry when the flags are parsed, so a bad value fails before
// any model loads, with an error naming where it came from and what this
// binary offers.
//
// The backends a binary offers are those it imports; commands import
// kernels/backends for that.
package backendflag

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/tensorforge/forge/kernels"
)

// EnvVar names the environment variable that picks the backend when no
// --device flag does.
const EnvVar = "FORGE_DEVICE"

// Flag registers --device on fs and returns its value, for Choose. The
// usage lists the backends registered when it is called.
func Flag(fs *flag.FlagSet) *string {
	return fs.String("device", "", "compute backend `NAME`: cpu, cuda, metal or auto; this binary has "+
		strings.Join(kernels.Names(), ", ")+" (default $"+EnvVar+", else auto: the best one that runs here)")
}

// Choose returns the registered backend to open (never "auto"): flagValue
// if set, else $FORGE_DEVICE, else the best available. An unknown or
// unavailable backend is an error that names the flag or the variable, and
// wraps kernels.ErrUnknown or kernels.ErrUnavailable.
func Choose(flagValue string) (string, error) {
	return choose(flagValue, os.Getenv(EnvVar))
}

func choose(flagValue, env string) (string, error) {
	what, v := "--device "+flagValue, flagValue
	if strings.TrimSpace(v) == "" {
		what, v = EnvVar+"="+env, env
	}
	if strings.TrimSpace(v) == "" {
		what, v = "--device auto (the default)", kernels.Auto
	}
	name, err := kernels.Resolve(v)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return name, nil
}

// Precision parses a device precision for matrix products ("f32", "f16",
// "bf16") for the chosen backend: half precision needs a backend with
// half-precision units, so asking for it on the CPU is an error that says
// so, at flag parsing.
func Precision(value, backend string) (kernels.DType, error) {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "", "f32", "fp32":
		return kernels.F32, nil
	case "f16", "fp16":
		if backend == "cpu" {
			return 0, fmt.Errorf("--precision %s: half-precision products run on a GPU (--device cuda); the cpu backend computes in f32", value)
		}
		return kernels.F16, nil
	case "bf16":
		if backend == "cpu" {
			return 0, fmt.Errorf("--precision %s: half-precision products run on a GPU (--device cuda); the cpu backend computes in f32", value)
		}
		return kernels.BF16, nil
	}
	return 0, fmt.Errorf("--precision %q: want f32, f16 or bf16", value)
}
