package backendflag

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/tensorforge/forge/kernels"
	_ "github.com/tensorforge/forge/kernels/backends"
)

// A backend that is registered but cannot run here, as a CUDA build on a
// machine without a driver: ranked above cpu, so "auto" must skip it.
func init() {
	kernels.Register(kernels.Registration{
		Name:  "nodriver",
		Open:  func(kernels.Options) (kernels.Backend, error) { return nil, errors.New("must not be opened") },
		Probe: func() error { return errors.New("no driver installed") },
		Rank:  100,
	})
}

func TestChoose(t *testing.T) {
	for _, c := range []struct {
		name      string
		flag, env string
		want      string
		err       error
		msg       []string // substrings of the error
	}{
		{name: "default", want: "cpu"},
		{name: "blank env", env: "  ", want: "cpu"},
		{name: "auto flag", flag: "auto", want: "cpu"},
		{name: "flag", flag: "cpu", want: "cpu"},
		{name: "flag case", flag: " CPU", want: "cpu"},
		{name: "env", env: "cpu", want: "cpu"},
		{name: "env auto", env: "AUTO", want: "cpu"},
		{name: "flag wins", flag: "cpu", env: "gpu", want: "cpu"},
		{name: "unknown flag", flag: "gpu", env: "cpu", err: kernels.ErrUnknown,
			msg: []string{"--device gpu", `unknown backend "gpu"`, "available: cpu, auto"}},
		{name: "not built in", flag: "tpu", err: kernels.ErrUnknown,
			msg: []string{"--device tpu", "not built into this binary", "available: cpu, auto"}},
		{name: "metal off darwin", flag: "metal", err: kernels.ErrUnavailable,
			msg: []string{"--device metal", "unavailable: not darwin", "available: cpu, auto"}},
		{name: "unknown env", env: "tpu", err: kernels.ErrUnknown,
			msg: []string{"FORGE_DEVICE=tpu", `unknown backend "tpu"`, "available: cpu, auto"}},
		{name: "unavailable flag", flag: "nodriver", err: kernels.ErrUnavailable,
			msg: []string{"--device nodriver", "no driver installed", "available: cpu, auto"}},
		{name: "unavailable env", env: "nodriver", err: kernels.ErrUnavailable,
			msg: []string{"FORGE_DEVICE=nodriver", "no driver installed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(EnvVar, c.env)
			got, err := Choose(c.flag)
			if c.err == nil {
				if err != nil || got != c.want {
					t.Fatalf("Choose(%q) with %s=%q = %q, %v; want %q", c.flag, EnvVar, c.env, got, err, c.want)
				}
				return
			}
			if !errors.Is(err, c.err) || got != "" {
				t.Fatalf("Choose(%q) with %s=%q = %q, %v; want an error wrapping %v", c.flag, EnvVar, c.env, got, err, c.err)
			}
			for _, m := range c.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not say %q", err, m)
				}
			}
		})
	}
}

// The flag's usage lists what this binary has, and parsing it stores the
// value as given (Choose resolves it).
func TestFlag(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	v := Flag(fs)
	if err := fs.Parse([]string{"--device", "cpu"}); err != nil || *v != "cpu" {
		t.Fatalf("--device cpu parsed as %q, %v", *v, err)
	}
	u := fs.Lookup("device").Usage
	for _, m := range []string{"cpu, cuda, metal or auto", "nodriver, cuda, metal, cpu, auto", "$" + EnvVar} {
		if !strings.Contains(u, m) {
			t.Errorf("usage %q does not say %q", u, m)
		}
	}
}

func TestPrecision(t *testing.T) {
	for _, c := range []struct {
		value, backend string
		want           kernels.DType
		msg            string
	}{
		{"", "cpu", kernels.F32, ""},
		{"f32", "cpu", kernels.F32, ""},
		{"F16", "cuda", kernels.F16, ""},
		{"bf16", "cuda", kernels.BF16, ""},
		{"f16", "cpu", 0, "run on a GPU"},
		{"bf16", "cpu", 0, "run on a GPU"},
		{"f8", "cuda", 0, `want f32, f16 or bf16`},
	} {
		got, err := Precision(c.value, c.backend)
		if c.msg == "" && (err != nil || got != c.want) {
			t.Errorf("Precision(%q, %q) = %v, %v; want %v", c.value, c.backend, got, err, c.want)
		}
		if c.msg != "" && (err == nil || !strings.Contains(err.Error(), c.msg)) {
			t.Errorf("Precision(%q, %q) = %v, %v; want an error saying %q", c.value, c.backend, got, err, c.msg)
		}
	}
}
