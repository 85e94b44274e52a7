package cuda

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/tensorforge/forge/kernels/cuda/driver"
	"github.com/tensorforge/forge/kernels/cuda/nvrtc"
)

// commonSource holds what the hand-written kernels share with generated
// ones: helpers and the cores of the int8 product and the row norm.
//
//go:embed common.cuh
var commonSource string

// kernelsSource holds the hand-written kernels other than attention (after
// commonSource).
//
//go:embed kernels.cu
var kernelsSource string

// attentionSource holds the hand-written attention kernels (after
// commonSource).
//
//go:embed attention.cu
var attentionSource string

// modules compiles CUDA C with NVRTC and loads it, caching the result in
// memory and on disk (keyed by a hash of the source, the architecture and
// the NVRTC and driver versions), so a second process starts without
// compiling.
//
// The result is the device's machine code (a cubin) where NVRTC can give
// it, so that neither a second process nor the first one's driver compiles
// anything; else PTX, which the driver compiles on loading (and caches in
// its own JIT cache, which a machine may not keep).
type modules struct {
	b      *Backend
	dir    string
	binary bool // cubins rather than PTX

	mu  sync.Mutex
	fns map[string]driver.Function // by kernel name

	// Counters for reports: compilations and loads from the disk cache,
	// with the time each took.
	compiled, cached       int
	compileTime, cacheTime time.Duration
}

func newModules(b *Backend, dir string) *modules {
	binary := b.nv.CanCompileBinary() && os.Getenv("FORGE_CUDA_PTX") == ""
	return &modules{b: b, dir: dir, binary: binary, fns: map[string]driver.Function{}}
}

// fixedProgram is a hand-written program and the entry points it defines.
type fixedProgram struct {
	name, src string
	kernels   []string
}

// fixedPrograms are the hand-written kernels: two programs, so that NVRTC
// compiles them at the same time.
var fixedPrograms = []fixedProgram{
	{"kernels.cu", commonSource + kernelsSource, []string{
		"forge_softmax", "forge_layer_norm", "forge_layer_norm_warp", "forge_group_norm", "forge_group_stats", "forge_group_apply",
		"forge_linear_q", "forge_gather", "forge_slice_update", "forge_repeat_interleave",
		"forge_pad", "forge_cumsum", "forge_conv1d", "forge_conv_transpose1d", "forge_lstm",
		"forge_dynamic_quantize", "forge_matmul_integer", "forge_conv_integer1d",
		"forge_to_half", "forge_dequantize", "forge_im2col", "forge_fill_rows", "forge_lstm_step", "forge_lstm_loop", "forge_col2im_t", "forge_transpose", "forge_transpose_many",
	}},
	{"attention.cu", commonSource + attentionSource, []string{
		"forge_attention", "forge_attention_rows", "forge_attention_decode", "forge_attention_combine",
		"forge_attention_tc", "forge_attention_kv_half", "forge_attention_fa", "forge_attention_fa_split",
	}},
}

// loadFixed compiles (or loads from the cache) the hand-written kernels.
func (m *modules) loadFixed() error {
	var jobs []func() error
	for _, p := range fixedPrograms {
		jobs = append(jobs, func() error {
			_, err := m.load(p.name, p.src, p.kernels)
			return err
		})
	}
	if err := parallel(jobs); err != nil {
		return err
	}
	// Attention's tiles for the largest heads, and the split flash
	// kernel's two groups, need more than the 48 KiB of shared memory a
	// block gets without asking.
	return m.b.th.Do(func() error {
		for _, k := range []struct {
			name  string
			bytes int
		}{{"forge_attention", attShared}, {"forge_attention_fa_split", faSplitShared}} {
			if err := m.b.drv.FuncSetAttribute(m.fixed(k.name), driver.FuncMaxDynamicSharedBytes, k.bytes); err != nil {
				return fmt.Errorf("cuda: %s's shared memory: %w", k.name, err)
			}
		}
		return nil
	})
}

// function returns a loaded kernel by name, compiling src (which defines
// it) the first time.
func (m *modules) function(name, src string) (driver.Function, error) {
	m.mu.Lock()
	f, ok := m.fns[name]
	m.mu.Unlock()
	if ok {
		return f, nil
	}
	fns, err := m.load(name, src, []string{name})
	if err != nil {
		return 0, err
	}
	return fns[0], nil
}

// kernelSource is a generated kernel to compile: its entry point's name
// and the program that defines it.
type kernelSource struct{ name, src string }

// functions returns the kernels of srcs, compiling those not loaded yet at
// the same time (NVRTC programs are independent; a plan's kernels compile
// on as many cores as the host has rather than one after another).
func (m *modules) functions(srcs []kernelSource) ([]driver.Function, error) {
	todo := map[string]string{}
	m.mu.Lock()
	for _, k := range srcs {
		if _, ok := m.fns[k.name]; !ok {
			todo[k.name] = k.src
		}
	}
	m.mu.Unlock()
	var jobs []func() error
	for name, src := range todo {
		jobs = append(jobs, func() error {
			_, err := m.load(name, src, []string{name})
			return err
		})
	}
	if err := parallel(jobs); err != nil {
		return nil, err
	}
	fns := make([]driver.Function, len(srcs))
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, k := range srcs {
		fns[i] = m.fns[k.name]
	}
	return fns, nil
}

// parallel runs jobs at the same time, at most GOMAXPROCS at once, and
// returns their errors joined.
func parallel(jobs []func() error) error {
	errs := make(chan error, len(jobs))
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, job := range jobs {
		go func() {
			slots <- struct{}{}
			err := job()
			<-slots
			errs <- err
		}()
	}
	var failed []error
	for range jobs {
		if err := <-errs; err != nil {
			failed = append(failed, err)
		}
	}
	return errors.Join(failed...)
}

// load compiles src (or reads its machine code or PTX from the disk
// cache), loads the module and looks up names in it.
func (m *modules) load(what, src string, names []string) ([]driver.Function, error) {
	b := m.b
	m.mu.Lock()
	binary := m.binary
	m.mu.Unlock()
	arch, ext, compile := fmt.Sprintf("compute_%d%d", b.info.Major, b.info.Minor), ".ptx", b.nv.Compile
	if binary {
		arch, ext, compile = fmt.Sprintf("sm_%d%d", b.info.Major, b.info.Minor), ".cubin", b.nv.CompileBinary
	}
	major, minor := b.nv.Version()
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00nvrtc %d.%d\x00driver %d\x00%s", arch, major, minor, b.drv.Version(), src)
	key := hex.EncodeToString(h.Sum(nil))[:32]
	var path string
	if m.dir != "" {
		path = filepath.Join(m.dir, key+ext)
	}
	start := time.Now()
	code, err := os.ReadFile(path)
	fromCache := err == nil && len(code) > 0
	if !fromCache {
		var log string
		code, log, err = compile(src, what, nvrtc.ArchOption(arch), "--std=c++14")
		if err != nil {
			return nil, fmt.Errorf("cuda: compiling %s: %w", what, err)
		}
		_ = log // warnings only
		if path != "" {
			writeCache(path, code)
		}
	}
	image := code
	if !binary {
		image = append(code[:len(code):len(code)], 0) // the driver reads a NUL-terminated PTX image
	}
	fns := make([]driver.Function, len(names))
	err = b.th.Do(func() error {
		mod, err := b.drv.ModuleLoadData(image)
		if err != nil {
			return err
		}
		for i, n := range names {
			if fns[i], err = b.drv.ModuleGetFunction(mod, n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if fromCache {
			// A damaged cache file must not break the backend: compile anew.
			_ = os.Remove(path)
			return m.load(what, src, names)
		}
		if binary {
			// NVRTC's machine code is newer than the driver can load:
			// from now on the driver compiles PTX, as it always can.
			m.mu.Lock()
			m.binary = false
			m.mu.Unlock()
			return m.load(what, src, names)
		}
		return nil, fmt.Errorf("cuda: loading %s: %w", what, err)
	}
	elapsed := time.Since(start)
	m.mu.Lock()
	defer m.mu.Unlock()
	if fromCache {
		m.cached++
		m.cacheTime += elapsed
	} else {
		m.compiled++
		m.compileTime += elapsed
	}
	for i, n := range names {
		m.fns[n] = fns[i]
	}
	return fns, nil
}

// fixed returns a hand-written kernel (loaded at New).
func (m *modules) fixed(name string) driver.Function {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fns[name]
}

// writeCache stores a compiled module atomically; failures only cost a
// compilation next time.
func writeCache(path string, data []byte) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".kernel-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		_ = os.Remove(tmp.Name())
	}
}

// CompileStats reports how many kernel modules were compiled by NVRTC and
// how many were loaded from the disk cache, and the time spent on each.
type CompileStats struct {
	Compiled, Cached       int
	CompileTime, CacheTime time.Duration
}

// CompileStats returns the backend's kernel compilation counters.
func (b *Backend) CompileStats() CompileStats {
	m := b.mods
	m.mu.Lock()
	defer m.mu.Unlock()
	return CompileStats{Compiled: m.compiled, Cached: m.cached, CompileTime: m.compileTime, CacheTime: m.cacheTime}
}
