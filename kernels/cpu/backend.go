package cpu

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
)

// buffer is host memory. Wrapped buffers alias caller memory and must not be
// written by kernels (the graph never writes to a constant slot).
type buffer struct {
	b       []byte
	wrapped bool // constant caller memory (Wrap)
	alias   bool // changing caller memory (Alias)
}

// Bytes returns the buffer size.
func (b *buffer) Bytes() int { return len(b.b) }

// Backend runs kernels on the host CPU.
type Backend struct {
	threads    int
	packed     sync.Map   // packedKey → *gemm.QuantB: integer GEMM weights packed once
	convW      sync.Map   // convKey → *gemm.ConvWeight: constant convolution weights packed once
	gemmB      sync.Map   // sgemmKey → *gemm.PackedB or, bf16, *gemm.BF16Weight: constant GEMM weights packed once
	packs      *packCache // convolution packs kept on disk (NewWithPackDir); nil keeps none
	dispatches atomic.Int64
	live       atomic.Int64
	peak       atomic.Int64
}

// New returns a CPU backend that splits large kernels over GOMAXPROCS
// goroutines.
func New() *Backend {
	return &Backend{threads: runtime.GOMAXPROCS(0)}
}

// Name returns "cpu".
func (b *Backend) Name() string { return "cpu" }

// Device describes the processor count and the GEMM path in use.
func (b *Backend) Device() string {
	return fmt.Sprintf("%s/%s, %d threads, sgemm: %s", runtime.GOOS, runtime.GOARCH, b.threads, gemm.Path())
}

// Alloc returns zeroed host memory aligned to 64 bytes.
func (b *Backend) Alloc(n int) (kernels.Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("cpu: alloc of %d bytes", n)
	}
	raw := make([]byte, n+64)
	adviseHuge(raw)
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(raw))) & 63)
	buf := &buffer{b: raw[off : off+n : off+n]}
	b.track(int64(n))
	return buf, nil
}

func (b *Backend) track(n int64) {
	live := b.live.Add(n)
	for {
		p := b.peak.Load()
		if live <= p || b.peak.CompareAndSwap(p, live) {
			return
		}
	}
}

// Free forgets a buffer (the garbage collector reclaims it), and for a
// wrapped one the packed copies made of it.
func (b *Backend) Free(buf kernels.Buffer) {
	x, ok := buf.(*buffer)
	switch {
	case !ok || x.alias:
	case x.wrapped:
		b.forgetPacks(x)
	default:
		b.live.Add(-int64(len(x.b)))
		x.b = nil
	}
}

// forgetPacks drops the packed copies of wrapped buffer x's memory (keyed
// by its address): the engine frees a constant that no plan holds any
// more, and memory the collector then gives to another constant must not
// be read through the old one's packs.
func (b *Backend) forgetPacks(x *buffer) {
	if len(x.b) == 0 {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(x.b)))
	for _, m := range []*sync.Map{&b.packed, &b.convW, &b.gemmB} {
		m.Range(func(k, _ any) bool {
			var of bool
			switch k := k.(type) {
			case sgemmKey:
				of = k.data == p
			case convKey:
				of = k.data == p
			case convTKey:
				of = k.data == p
			case packedKey:
				of = k.data == p || k.zb >= p && k.zb < p+uintptr(len(x.b))
			}
			if of {
				m.Delete(k)
			}
			return true
		})
	}
}

// Wrap references host memory without copying.
func (b *Backend) Wrap(host []byte) (kernels.Buffer, error) {
	return &buffer{b: host, wrapped: true}, nil
}

// write copies src into dst.
func (b *Backend) write(dst kernels.Buffer, off int, src []byte) error {
	d, ok := dst.(*buffer)
	if !ok || d.wrapped {
		return fmt.Errorf("cpu: write to a foreign or read-only buffer")
	}
	if off < 0 || off+len(src) > len(d.b) {
		return fmt.Errorf("cpu: write of %d bytes at %d overflows a %d-byte buffer", len(src), off, len(d.b))
	}
	copy(d.b[off:], src)
	return nil
}

// read copies from src into dst.
func (b *Backend) read(dst []byte, src kernels.Buffer, off int) error {
	s, ok := src.(*buffer)
	if !ok {
		return fmt.Errorf("cpu: read from a foreign buffer")
	}
	if off < 0 || off+len(dst) > len(s.b) {
		return fmt.Errorf("cpu: read of %d bytes at %d overflows a %d-byte buffer", len(dst), off, len(s.b))
	}
	copy(dst, s.b[off:])
	return nil
}

// Alias returns a writable buffer over mem, which the backend treats as
// changing between runs (it never caches anything derived from it).
func (b *Backend) Alias(mem []byte) (kernels.Buffer, error) { return &buffer{b: mem, alias: true}, nil }

// HostBytes returns the memory behind a buffer of this backend.
func (b *Backend) HostBytes(buf kernels.Buffer) ([]byte, bool) {
	x, ok := buf.(*buffer)
	if !ok {
		return nil, false
	}
	return x.b, true
}

// Stats reports launches and buffer bytes.
func (b *Backend) Stats() kernels.Stats {
	return kernels.Stats{Dispatches: b.dispatches.Load(), PeakBytes: b.peak.Load(), LiveBytes: b.live.Load()}
}

// NewQueue returns a queue that runs each step to completion in the calling
// goroutine: CPU work needs no stream, and queues of one backend may be
// used by different goroutines at once.
func (b *Backend) NewQueue() (kernels.Queue, error) { return queue{b}, nil }

// queue is the CPU's synchronous queue.
type queue struct{ b *Backend }

func (q queue) Write(ctx context.Context, dst kernels.Buffer, off int, src []byte) error {
	return q.b.write(dst, off, src)
}

func (q queue) Read(ctx context.Context, dst []byte, src kernels.Buffer, off int) error {
	return q.b.read(dst, src, off)
}

func (q queue) Launch(ctx context.Context, s *kernels.Step, bufs []kernels.Buffer) error {
	return q.b.Launch(s, bufs)
}

func (q queue) Sync(ctx context.Context) error { return ctx.Err() }

func (q queue) Close() error { return nil }

// Launch checks a step's views against bufs and runs it to completion.
func (b *Backend) Launch(s *kernels.Step, bufs []kernels.Buffer) error {
	for _, v := range s.In {
		if err := checkView(v, bufs); err != nil {
			return fmt.Errorf("input: %w", err)
		}
	}
	for _, v := range s.Out {
		if err := checkView(v, bufs); err != nil {
			return fmt.Errorf("output: %w", err)
		}
	}
	return b.run(s, bufs)
}

// run dispatches a checked step to its kernel.
func (b *Backend) run(s *kernels.Step, bufs []kernels.Buffer) error {
	b.dispatches.Add(1)
	switch s.Op {
	case kernels.OpFused:
		return b.fused(s, bufs)
	case kernels.OpReduce:
		return b.reduce(s, bufs)
	case kernels.OpSoftmax:
		return b.softmax(s, bufs)
	case kernels.OpLayerNorm:
		return b.layerNorm(s, bufs)
	case kernels.OpGroupNorm:
		return b.groupNorm(s, bufs)
	case kernels.OpMatMul:
		return b.matmul(s, bufs)
	case kernels.OpConv1d:
		return b.conv1d(s, bufs)
	case kernels.OpConvTranspose1d:
		return b.convTranspose1d(s, bufs)
	case kernels.OpLSTM:
		return b.lstm(s, bufs)
	case kernels.OpGather:
		return b.gather(s, bufs)
	case kernels.OpRepeatInterleave:
		return b.repeatInterleave(s, bufs)
	case kernels.OpPad:
		return b.pad(s, bufs)
	case kernels.OpCumsum:
		return b.cumsum(s, bufs)
	case kernels.OpMatMulInteger:
		return b.matmulInteger(s, bufs)
	case kernels.OpConvInteger1d:
		return b.convInteger1d(s, bufs)
	case kernels.OpDynamicQuantize:
		return b.dynamicQuantize(s, bufs)
	case kernels.OpLinearQ:
		return b.linearQ(s, bufs)
	case kernels.OpAttention:
		return b.attention(s, bufs)
	case kernels.OpSliceUpdate:
		return b.sliceUpdate(s, bufs)
	}
	return fmt.Errorf("cpu: op %s is not implemented", s.Op)
}

// checkView verifies that every element a view can reach lies inside its
// buffer, so a bad plan fails with an error instead of corrupting memory.
func checkView(v kernels.View, bufs []kernels.Buffer) error {
	if v.Slot < 0 || v.Slot >= len(bufs) || bufs[v.Slot] == nil {
		return fmt.Errorf("cpu: view refers to missing buffer slot %d", v.Slot)
	}
	x, ok := bufs[v.Slot].(*buffer)
	if !ok {
		return fmt.Errorf("cpu: view refers to a foreign buffer in slot %d", v.Slot)
	}
	n := len(x.b) / max(v.DType.Size(), 1)
	if lo, hi := v.Span(); hi > lo && (lo < 0 || hi > n) {
		return fmt.Errorf("cpu: view %s%v at offset %d (strides %v) reaches outside its %d-element buffer", v.DType, v.Shape, v.Offset, v.Strides, n)
	}
	return nil
}

// Typed access to buffers.

func bytesOf(bufs []kernels.Buffer, v kernels.View) []byte { return bufs[v.Slot].(*buffer).b }

func f32s(bufs []kernels.Buffer, v kernels.View) []float32 {
	b := bytesOf(bufs, v)
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

func i64s(bufs []kernels.Buffer, v kernels.View) []int64 {
	b := bytesOf(bufs, v)
	return unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
}

func i32s(bufs []kernels.Buffer, v kernels.View) []int32 {
	b := bytesOf(bufs, v)
	return unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

func u16s(bufs []kernels.Buffer, v kernels.View) []uint16 {
	b := bytesOf(bufs, v)
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
}
