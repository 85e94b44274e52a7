package kerneltest_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/tensorforge/forge/kernels"
	"github.com/tensorforge/forge/kernels/cpu"
	"github.com/tensorforge/forge/kernels/kerneltest"
)

// TestPartial runs the kit on the test double: the default one (fused and
// matmul; every other op skipped) and one that supports every op, so each
// goes through device-style buffers and the queue's copies.
func TestPartial(t *testing.T) {
	for _, ops := range [][]kernels.Op{nil, kerneltest.AllOps()} {
		p := kerneltest.NewPartial(ops...)
		kerneltest.Check(t, p)
		c := p.Counts()
		t.Logf("%s: %d launches, %d writes (%d bytes), %d reads (%d bytes)", p.Device(), c.Launches, c.Writes, c.WriteBytes, c.Reads, c.ReadBytes)
		if c.Launches == 0 || c.Writes == 0 || c.Reads == 0 {
			t.Errorf("%s: counters did not move: %+v", p.Device(), c)
		}
		for op := range c.PerOp {
			if !p.Supports(&kernels.Step{Op: op}) {
				t.Errorf("%s launched %s, which it does not support", p.Device(), op)
			}
		}
	}
}

func TestEveryOpHasCases(t *testing.T) {
	if m := kerneltest.Uncovered(); len(m) > 0 {
		t.Errorf("the kit has no cases for %v: add a generator in cases*.go", m)
	}
}

func TestPartialRejects(t *testing.T) {
	p := kerneltest.NewPartial()
	q, err := p.NewQueue()
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()
	if err := q.Launch(ctx, &kernels.Step{Op: kernels.OpSoftmax}, nil); err == nil {
		t.Error("an unsupported step was launched")
	}
	host, _ := cpu.New().Alloc(8)
	if err := q.Write(ctx, host, 0, make([]byte, 8)); err == nil {
		t.Error("a write to a CPU buffer was accepted")
	}
	if _, ok := kernels.Backend(p).(kernels.HostMapper); ok {
		t.Error("the double addresses host memory: an engine would not copy")
	}
}

// TestCheckFails proves every op's cases can fail: a backend that gets the
// first element of each step's first output slightly wrong, or writes one
// element past it, must be reported.
func TestCheckFails(t *testing.T) {
	for _, op := range kerneltest.AllOps() {
		if m := kerneltest.Uncovered(); contains(m, op) {
			continue
		}
		t.Run(op.String(), func(t *testing.T) {
			r := check(mutant{Backend: cpu.New(), op: op}, kerneltest.Only(op), kerneltest.AgainstFloat64())
			if len(r) == 0 {
				t.Errorf("a backend that gets %s wrong passed the kit", op)
			}
		})
	}
	t.Run("write past an output", func(t *testing.T) {
		r := check(mutant{Backend: cpu.New(), op: kernels.OpFused, past: true}, kerneltest.Only(kernels.OpFused))
		if !strings.Contains(strings.Join(r, "\n"), "outside the step's outputs") {
			t.Errorf("a backend that writes past its outputs passed the kit")
		}
	})
}

func contains(ops []kernels.Op, op kernels.Op) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

// check runs the kit on b with a recorder in place of the test and returns
// the failures it reported.
func check(b kernels.Backend, opts ...kerneltest.Option) []string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer r.cleanup()
		kerneltest.Check(r, b, opts...)
	}()
	<-done
	return r.errs
}

// recorder is a testing.TB that collects failures instead of failing.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func (r *recorder) Helper()             {}
func (r *recorder) Log(...any)          {}
func (r *recorder) Logf(string, ...any) {}
func (r *recorder) Cleanup(f func())    { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}
func (r *recorder) cleanup() {
	for _, f := range r.cleanups {
		f()
	}
}

// mutant is the CPU backend with one op broken: after each of its steps
// the first element of the first output is moved (NaN becomes 0, floats
// by 0.1% and 0.001, integers by 3), or with past set one element after
// the output's last is overwritten.
type mutant struct {
	*cpu.Backend
	op   kernels.Op
	past bool
}

func (m mutant) NewQueue() (kernels.Queue, error) {
	q, err := m.Backend.NewQueue()
	return mutantQueue{q, m}, err
}

type mutantQueue struct {
	kernels.Queue
	m mutant
}

func (q mutantQueue) Launch(ctx context.Context, s *kernels.Step, bufs []kernels.Buffer) error {
	if err := q.Queue.Launch(ctx, s, bufs); err != nil || s.Op != q.m.op || len(s.Out) == 0 {
		return err
	}
	v := s.Out[0]
	if v.Len() == 0 {
		return nil
	}
	mem, _ := q.m.HostBytes(bufs[v.Slot])
	sz := v.DType.Size()
	at := v.Offset
	if q.m.past {
		_, hi := v.Span()
		if (hi+1)*sz > len(mem) {
			return nil
		}
		at = hi
		for k := range sz {
			mem[at*sz+k] ^= 0x5a
		}
		return nil
	}
	b := mem[at*sz:]
	switch v.DType {
	case kernels.F32:
		x := math.Float32frombits(binary.LittleEndian.Uint32(b))
		if x != x {
			x = 0
		} else {
			x = x*1.001 + 0.001
		}
		binary.LittleEndian.PutUint32(b, math.Float32bits(x))
	case kernels.I32:
		binary.LittleEndian.PutUint32(b, binary.LittleEndian.Uint32(b)+3)
	case kernels.I64:
		binary.LittleEndian.PutUint64(b, binary.LittleEndian.Uint64(b)+3)
	default:
		b[0] ^= 0x40 // sign or a high bit of the narrow types
	}
	return nil
}
