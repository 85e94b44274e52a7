package whisper

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/cpu"

	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/internal/outfile"
)

// The silence tail (see silenceTail) is the encoding of 30 s of silence:
// the same for every process that runs the same weights in the same
// precision with the same code on the same backend, and a third of the CPU
// time of a `listen` on an 11-s clip (0.34 CPU-s for tiny, 1.1 for base).
// So the model keeps it beside its weights, keyed by all of that, and a
// later process reads 18 MB (tiny; base 37 MB) instead of encoding it.
//
// The key holds the build's VCS revision when it has one and no local
// modifications, else the executable's path, size and modification time,
// so a rebuilt binary never reads what another build wrote. A file is its
// states' bytes followed by their CRC-32C (Castagnoli), which finds a
// damaged file as surely as the SHA-256 it replaced and costs a process 1
// ms for tiny's tail instead of 11 (2-core EPYC); one that does not check
// out is computed again and replaced (through internal/outfile, so a
// reader never sees half of one). Writing one removes the model's other
// tails that are an hour old or beyond the two newest, which only other
// builds (or thread counts) can read.

// tailCache says where and under which code version the silence tail is
// kept; the zero value keeps nothing.
type tailCache struct {
	dir, version string
}

// path returns the tail's file for m, or "" when m keeps none.
func (c tailCache) path(m *Model) string {
	if c.dir == "" || c.version == "" {
		return ""
	}
	h := sha256.New()
	// The CPU's features too: a model cache copied to another machine
	// would take the same fast paths' results for its own.
	fmt.Fprintf(h, "silence tail\x00%s\x00%s\x00%s\x00%s\x00%s\x00%d\x00%s\x00%+v", c.version, m.sha, m.prec, m.eng.Backend().Name(), m.eng.Backend().Device(), runtime.GOMAXPROCS(0), runtime.GOARCH, cpu.X86)
	return filepath.Join(c.dir, "silence-"+hex.EncodeToString(h.Sum(nil)[:12])+".bin")
}

// load fills t's states from the cached file, one state's bytes at a
// time (the whole file would be base's 37 MB more at the process's peak);
// it reports false when there is none, or none that checks out (the
// states then hold whatever was read, and the caller computes them).
func (c tailCache) load(ctx context.Context, m *Model, t *silenceTail) bool {
	p := c.path(m)
	if p == "" {
		return false
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	states := t.states()
	size := int64(0)
	for _, st := range states {
		size += int64(st.Shape().Len() * 4)
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != size+crc32.Size {
		return false
	}
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	var buf []byte
	for _, st := range states {
		buf = slices.Grow(buf[:0], st.Shape().Len()*4)[:st.Shape().Len()*4]
		if _, err := io.ReadFull(f, buf); err != nil {
			return false
		}
		h.Write(buf)
		if st.Write(ctx, buf) != nil {
			return false
		}
	}
	var sum [crc32.Size]byte
	if _, err := io.ReadFull(f, sum[:]); err != nil {
		return false
	}
	return bytes.Equal(sum[:], h.Sum(nil))
}

// store writes t's states to the cache; a failure only means the next
// process computes the tail again.
func (c tailCache) store(ctx context.Context, m *Model, t *silenceTail) {
	p := c.path(m)
	if p == "" || os.MkdirAll(c.dir, 0o755) != nil {
		return
	}
	f, err := outfile.Create(p)
	if err != nil {
		return
	}
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	w := io.MultiWriter(f, h)
	var buf []byte
	for _, st := range t.states() {
		buf = slices.Grow(buf[:0], st.Shape().Len()*4)[:st.Shape().Len()*4]
		if err = st.Read(ctx, buf); err != nil {
			break
		}
		if _, err = w.Write(buf); err != nil {
			break
		}
	}
	if err == nil {
		_, err = f.Write(h.Sum(nil))
	}
	if err != nil {
		f.Abort()
		return
	}
	if f.Commit() != nil {
		return
	}
	// Other builds' tails go once they are an hour old, or beyond the two
	// newest: a fresh one may be a test binary's or another version's
	// running now, but every rebuilt test binary writes its own (78 of
	// them, 1.4 GB for tiny, after an afternoon of tests).
	outfile.Prune(filepath.Join(c.dir, "silence-*.bin"), p, 2, time.Hour)
}

// states lists the tail's states in the cache file's order.
func (t *silenceTail) states() []*graph.State {
	var out []*graph.State
	for i := range t.k {
		out = append(out, t.k[i], t.v[i])
	}
	return out
}
