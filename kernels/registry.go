package kernels

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Options configure a backend when it is opened.
type Options struct {
	// Ordinal selects one of several devices of the same kind (0: the
	// first).
	Ordinal int
	// Precision is the arithmetic of matrix products, convolutions and
	// attention on a device: F32 (the default, also for InvalidDType), or
	// F16 / BF16 where the backend has half-precision units (accumulating
	// in float32). Elementwise work stays float32. Backends without half
	// products reject F16 and BF16.
	Precision DType
	// PackDir is a directory where the backend may keep what it derives
	// from mapped weight files (the CPU backend's packed weights) for
	// later processes to map instead of deriving again; "" keeps nothing.
	// Backends that derive nothing ignore it.
	PackDir string
}

// Opener creates a backend.
type Opener func(Options) (Backend, error)

// Registration describes a backend kind to the registry.
type Registration struct {
	// Name is what users type: --device NAME, FORGE_DEVICE=NAME.
	Name string
	// Open creates the backend.
	Open Opener
	// Probe reports why the backend cannot run on this machine (no driver,
	// no device, wrong OS), or nil when it can. It is called on every
	// Open and Available, so it must be cheap after its first call.
	Probe func() error
	// Rank orders the kinds that "auto" tries: highest first.
	Rank int
}

// registry is the table of backend kinds: a documented process-wide
// registry, filled by the init functions of backend packages.
var registry = struct {
	sync.Mutex
	kinds map[string]Registration
}{kinds: map[string]Registration{}}

// Register adds a backend kind. Backend packages call it from init; a
// second registration of a name replaces the first.
func Register(r Registration) {
	if r.Name == "" || r.Open == nil {
		panic("kernels: Register needs a name and an Open function")
	}
	registry.Lock()
	defer registry.Unlock()
	registry.kinds[r.Name] = r
}

// Auto is the device name that picks the best available backend.
const Auto = "auto"

// ErrUnavailable is wrapped by Open's errors for a registered backend that
// cannot run on this machine.
var ErrUnavailable = errors.New("backend unavailable")

// ErrUnknown is wrapped by Open's errors for a name nothing registered.
var ErrUnknown = errors.New("unknown backend")

// Kind is one registered backend and whether it can run here.
type Kind struct {
	Name string
	Rank int
	Err  error // why it cannot run here; nil when it can
}

// Kinds lists the registered backends, best first, each with the reason it
// is unavailable (if it is).
func Kinds() []Kind {
	registry.Lock()
	regs := make([]Registration, 0, len(registry.kinds))
	for _, r := range registry.kinds {
		regs = append(regs, r)
	}
	registry.Unlock()
	sort.Slice(regs, func(i, j int) bool {
		if regs[i].Rank != regs[j].Rank {
			return regs[i].Rank > regs[j].Rank
		}
		return regs[i].Name < regs[j].Name
	})
	out := make([]Kind, len(regs))
	for i, r := range regs {
		out[i] = Kind{Name: r.Name, Rank: r.Rank}
		if r.Probe != nil {
			out[i].Err = r.Probe()
		}
	}
	return out
}

// Names lists the names Open accepts: every registered backend and "auto".
func Names() []string {
	var names []string
	for _, k := range Kinds() {
		names = append(names, k.Name)
	}
	return append(names, Auto)
}

// Open creates the backend registered under name; "auto" (or "") picks the
// highest-ranked one that can run here. An unknown name or an unavailable
// backend is an error that names what is available.
func Open(name string, opts Options) (Backend, error) {
	name, err := Resolve(name)
	if err != nil {
		return nil, err
	}
	return open(name, opts)
}

// Resolve returns the name of the backend Open(name) would create, without
// creating it: name itself (trimmed, lower case) or, for "auto" and "", the
// highest-ranked backend that can run here. It fails as Open would, so a
// command can reject a bad --device before it loads anything.
func Resolve(name string) (string, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	kinds := Kinds()
	if name == "" || name == Auto {
		var why []string
		for _, k := range kinds {
			if k.Err == nil {
				return k.Name, nil
			}
			why = append(why, fmt.Sprintf("%s: %v", k.Name, k.Err))
		}
		if len(kinds) == 0 {
			return "", fmt.Errorf("kernels: no backend is registered (import kernels/backends): %w", ErrUnavailable)
		}
		return "", fmt.Errorf("kernels: no backend can run here (%s): %w", strings.Join(why, "; "), ErrUnavailable)
	}
	i := slices.IndexFunc(kinds, func(k Kind) bool { return k.Name == name })
	if i < 0 {
		return "", fmt.Errorf("kernels: %w %q: not built into this binary (available: %s)", ErrUnknown, name, describe(kinds))
	}
	if err := kinds[i].Err; err != nil {
		return "", fmt.Errorf("kernels: %s: %w: %v (available: %s)", name, ErrUnavailable, err, describe(kinds))
	}
	return name, nil
}

func open(name string, opts Options) (Backend, error) {
	registry.Lock()
	r := registry.kinds[name]
	registry.Unlock()
	b, err := r.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("kernels: opening %s: %w", name, err)
	}
	return b, nil
}

// describe lists the kinds that can run here, for error messages.
func describe(kinds []Kind) string {
	var ok []string
	for _, k := range kinds {
		if k.Err == nil {
			ok = append(ok, k.Name)
		}
	}
	ok = append(ok, Auto)
	return strings.Join(ok, ", ")
}
