package cuda

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cuda/cublaslt"
	"github.com/tensorforge/forge/kernels/cuda/driver"
	"github.com/tensorforge/forge/kernels/cuda/nvrtc"
)

// Backend runs kernels on one NVIDIA GPU. Its methods are safe for
// concurrent use; every driver call goes through the backend's locked
// thread (driver.Thread), which owns the device's primary context.
type Backend struct {
	drv  *driver.Driver
	th   *driver.Thread
	info driver.DeviceInfo
	nv   *nvrtc.Library
	mem  *arena

	mods *modules // compiled kernels: the hand-written module and generated ones
	blas *gemm    // cuBLASLt, or nil where the library is missing

	// setup is an internal stream for uploads and zero-fills done outside
	// any queue (Alloc, Wrap).
	setup driver.Stream

	precision kernels.DType // F32, or F16/BF16 for matrix products
	prof      *profiler     // FORGE_CUDA_PROFILE: per-step device times
	// early: kernels that wait for their inputs themselves start while the
	// kernel before them finishes (compute capability 9.0 and a driver
	// with cuLaunchKernelEx; FORGE_CUDA_EARLY=off turns it off, to compare).
	early bool
	// faSplit: the encoder's flash attention splits the keys inside its
	// blocks where its grid is small (faSplits; FORGE_CUDA_FA_SPLIT=off
	// turns it off, to compare).
	faSplit bool

	dispatches atomic.Int64

	// warming is New's background start of cuBLASLt (gemm.warm), which
	// Close waits for.
	warming sync.WaitGroup

	mu     sync.Mutex
	closed bool
}

// buffer is a range of device memory from the backend's arena.
type buffer struct {
	ptr     driver.DevicePtr
	n       int // bytes asked for
	size    int // bytes reserved (aligned)
	wrapped bool
}

// Bytes returns the buffer's size in bytes.
func (b *buffer) Bytes() int { return b.n }

// New opens the GPU with the given ordinal: loads the driver and NVRTC,
// starts the context's thread and compiles the hand-written kernels (from
// the disk cache when it has them).
func New(opts kernels.Options) (*Backend, error) {
	drv, err := driver.Load()
	if err != nil {
		return nil, err
	}
	// cuBLASLt's library loads (~70 ms on the H100's host) while the
	// context is created (~120 ms); newGemm waits for it.
	go func() { _, _ = cublaslt.Load() }()
	info, err := drv.Info(opts.Ordinal)
	if err != nil {
		return nil, fmt.Errorf("cuda: device %d: %w", opts.Ordinal, err)
	}
	nv, err := nvrtc.Default()
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	th, err := drv.NewThread(opts.Ordinal)
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	b := &Backend{drv: drv, th: th, info: info, nv: nv, precision: kernels.F32}
	switch opts.Precision {
	case kernels.InvalidDType, kernels.F32:
	case kernels.F16, kernels.BF16:
		b.precision = opts.Precision
	default:
		th.Close()
		return nil, fmt.Errorf("cuda: precision %s is not one of f32, f16, bf16", opts.Precision)
	}
	b.mem = &arena{slabSize: 256 << 20, grow: b.mapSlab}
	b.early = info.Major >= 9 && drv.CanLaunchEarly() && os.Getenv("FORGE_CUDA_EARLY") != "off"
	b.faSplit = os.Getenv("FORGE_CUDA_FA_SPLIT") != "off"
	if os.Getenv("FORGE_CUDA_PROFILE") != "" {
		b.prof = &profiler{byKey: map[string]*profEntry{}}
	}
	if err := th.Do(func() error {
		var err error
		b.setup, err = drv.StreamCreate(driver.StreamNonBlocking)
		return err
	}); err != nil {
		th.Close()
		return nil, fmt.Errorf("cuda: %w", err)
	}
	b.mods = newModules(b, cacheDir())
	if err := b.mods.loadFixed(); err != nil {
		th.Close()
		return nil, err
	}
	b.blas, err = newGemm(b)
	if err != nil {
		th.Close()
		return nil, err
	}
	if b.blas != nil {
		b.warming.Add(1)
		go func() {
			defer b.warming.Done()
			// A failure shows again, with its context, at the first
			// product a program runs.
			_ = b.blas.warm()
		}()
	}
	return b, nil
}

// cacheDir is where compiled kernels are kept between processes: beside
// the model cache ($FORGE_KERNELS, else $XDG_CACHE_HOME/forge/kernels,
// else ~/.cache/forge/kernels). Empty when none can be found.
func cacheDir() string {
	if d := os.Getenv("FORGE_KERNELS"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return d + "/forge/kernels"
}

// mapSlab allocates a slab of device memory for the arena.
func (b *Backend) mapSlab(n int) (uint64, error) {
	var p driver.DevicePtr
	err := b.th.Do(func() error {
		var err error
		p, err = b.drv.MemAlloc(n)
		return err
	})
	return uint64(p), err
}

// Name returns "cuda".
func (b *Backend) Name() string { return "cuda" }

// Device names the GPU, its architecture and the precision of products.
func (b *Backend) Device() string {
	s := b.info.String()
	if b.precision != kernels.F32 {
		s += ", products in " + b.precision.String()
	}
	return s
}

// Alloc returns zeroed device memory.
func (b *Backend) Alloc(n int) (kernels.Buffer, error) {
	addr, size, err := b.mem.alloc(n)
	if err != nil {
		return nil, err
	}
	buf := &buffer{ptr: driver.DevicePtr(addr), n: n, size: size}
	if err := b.th.Do(func() error {
		if err := b.drv.MemsetD8Async(buf.ptr, 0, size, b.setup); err != nil {
			return err
		}
		return b.drv.StreamSynchronize(b.setup)
	}); err != nil {
		b.mem.release(addr, size)
		return nil, fmt.Errorf("cuda: zeroing %d bytes: %w", n, err)
	}
	return buf, nil
}

// Free returns a buffer's memory to the arena, and a constant's derived
// copies (gemm.forget) with it.
func (b *Backend) Free(x kernels.Buffer) {
	buf, ok := x.(*buffer)
	if !ok || buf.size == 0 {
		return
	}
	if buf.wrapped && b.blas != nil {
		for _, d := range b.blas.forget(buf.ptr, buf.ptr+driver.DevicePtr(max(buf.n, 1))) {
			b.Free(d)
		}
	}
	b.mem.release(uint64(buf.ptr), buf.size)
	buf.size = 0
}

// Wrap uploads host bytes once into a read-only buffer.
func (b *Backend) Wrap(host []byte) (kernels.Buffer, error) {
	addr, size, err := b.mem.alloc(len(host))
	if err != nil {
		return nil, err
	}
	buf := &buffer{ptr: driver.DevicePtr(addr), n: len(host), size: size, wrapped: true}
	if len(host) == 0 {
		return buf, nil
	}
	// Uploads go through pinned memory in pieces: pageable copies would
	// stage through the driver anyway, and weights can be hundreds of MB.
	if err := b.th.Do(func() error { return b.upload(buf.ptr, host) }); err != nil {
		b.mem.release(addr, size)
		return nil, fmt.Errorf("cuda: uploading %d bytes: %w", len(host), err)
	}
	return buf, nil
}

// upload copies host to dst synchronously on the setup stream (on the
// backend's thread).
func (b *Backend) upload(dst driver.DevicePtr, host []byte) error {
	if err := b.drv.MemcpyHtoDAsync(dst, host, b.setup); err != nil {
		return err
	}
	return b.drv.StreamSynchronize(b.setup)
}

// Precision returns the arithmetic of the backend's matrix products.
func (b *Backend) Precision() kernels.DType { return b.precision }

// stepPrecision is the precision step s's products run in: the backend's,
// or float32 for a step of a full-precision graph (kernels.Step.F32).
func (b *Backend) stepPrecision(s *kernels.Step) kernels.DType {
	if s.F32 {
		return kernels.F32
	}
	return b.precision
}

// Stats reports launches and device memory.
func (b *Backend) Stats() kernels.Stats {
	live, peak := b.mem.stats()
	return kernels.Stats{Dispatches: b.dispatches.Load(), PeakBytes: int64(peak), LiveBytes: int64(live)}
}

// Close releases the device. Buffers and queues must not be used after.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	b.warming.Wait()
	return b.th.Close()
}
