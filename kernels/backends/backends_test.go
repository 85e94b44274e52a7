package backends_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/tensorforge/forge/kernels"
	_ "github.com/tensorforge/forge/kernels/backends"
)

// Importing the package registers the backends a command can open: cpu
// always, and "auto" finds one.
func TestRegistered(t *testing.T) {
	if names := kernels.Names(); !slices.Contains(names, "cpu") || !slices.Contains(names, kernels.Auto) {
		t.Fatalf("kernels.Names() = %v, want cpu and auto among them", names)
	}
	for _, c := range []struct {
		name string
		want string // the backend's Name(); "" for an error
		err  error
	}{
		{"cpu", "cpu", nil},
		{" CPU ", "cpu", nil},
		{"auto", "", nil}, // whichever ranks highest here
		{"", "", nil},
		{"no-such-device", "", kernels.ErrUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := kernels.Open(c.name, kernels.Options{})
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("Open(%q) = %v, want %v", c.name, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(%q): %v", c.name, err)
			}
			if c.want != "" && b.Name() != c.want {
				t.Errorf("Open(%q) opened %s, want %s", c.name, b.Name(), c.want)
			}
			if r, err := kernels.Resolve(c.name); err != nil || r != b.Name() {
				t.Errorf("Resolve(%q) = %q, %v; Open opened %s", c.name, r, err, b.Name())
			}
		})
	}
}
