package cpu

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/cpu"

	"github.com/tensorforge/forge/internal/buildid"
	"github.com/tensorforge/forge/internal/filepages"
	"github.com/tensorforge/forge/internal/outfile"
	"github.com/tensorforge/forge/internal/packfile"
	"github.com/tensorforge/forge/kernels/cpu/gemm"
)

// Packed constant convolution weights and float32 GEMM operands are kept
// on disk between processes when the backend is given a directory
// (NewWithPackDir; speech's engines name a folder of the model cache).
// Packing Kokoro's weights (the decoder's and generator's convolutions in
// bfloat16, the text stages' in float32, ALBERT's and the LSTMs' input
// products: 180 MB of packs) is a quarter of a second of CPU at every
// start, and its result depends only on the weight's bytes, its shape and
// the CPU path: so a process that packed writes every pack of a weight
// file into one file beside the model (SavePacks, which speech's
// synthesizer calls after Warm), and a later process maps that file
// read-only and hands the mapped words to the kernels in place
// (gemm.ConvWeightFrom, gemm.PackedBFrom): no packing, no copy, and the
// packed float32 weights' pages are not read (a GEMM operand's are, by
// products of one row, as before). The bfloat16 GEMM operands and integer
// weights are still packed in memory (Kokoro's default path has none).
//
// A weight is found in the cache by where its bytes lie in a mapped
// weight file (package filepages), never by its address: one file per
// weight file, named by the weight file's identity (path, size,
// modification time, inode) and by everything else a pack depends on:
// the build (internal/buildid), the GEMM and convolution paths chosen
// for this CPU and its features, and the pack file format. A pack inside
// is keyed by the weight's offset, its shape and its form. A file that is
// missing, damaged, of another key or short of a pack is never trusted
// (package packfile checks it): the weights it lacks are packed in memory
// as without a cache, and SavePacks replaces it. Weights outside every
// mapped file (folded constants, the int8 artifact's dequantized copies)
// are packed in memory as before.

// packCache is the backend's view of its pack directory; nil keeps
// nothing.
type packCache struct {
	dir string

	mu   sync.Mutex
	sets map[string]*packSet // by weight file identity (filepages' id)
}

// packSet is what the cache holds for one weight file: the mapped pack
// file, if one checked out, and the packs made in this process.
type packSet struct {
	path   string // the pack file
	prefix string // the file name's weight-file part, shared by other builds' files
	key    [24]byte
	file   *packfile.File // nil when none checked out
	why    error          // why file is nil, where not simply missing
	fresh  map[string][]byte
	used   map[string]bool // the file's blobs this process uses
}

// keptPack is the first use of a constant weight of wb, whose packed form
// cache does not hold under key yet (its callers look there first, on
// every launch): the pack kept in the pack file under diskKey(the weight
// file's offset) that from accepts, used in place, else a new one from
// pack; either is then kept in cache, and a new one in the pack file too.
// It returns the form cache holds (another goroutine's, where two raced)
// and whether pack ran.
func keptPack[W interface{ Words() []byte }](b *Backend, cache *sync.Map, wb *buffer, key any, diskKey func(fileOff int64) string, from func(words []byte) (W, error), pack func() W) (W, bool) {
	set, fileOff := b.packs.set(wb.b)
	dk := diskKey(fileOff)
	if words, ok := set.get(b.packs, dk); ok {
		if pw, err := from(words); err == nil {
			actual, _ := cache.LoadOrStore(key, pw)
			return actual.(W), false
		}
	}
	pw := pack()
	actual, loaded := cache.LoadOrStore(key, pw)
	if !loaded {
		set.put(b.packs, dk, pw.Words())
	}
	return actual.(W), true
}

// NewWithPackDir returns a backend as New does that keeps the packed
// constant convolution weights and float32 GEMM operands of mapped weight
// files in dir (created
// when needed) and maps them from there in later processes; see
// SavePacks. An empty dir keeps nothing.
func NewWithPackDir(dir string) *Backend {
	b := New()
	if dir != "" {
		b.packs = &packCache{dir: dir, sets: map[string]*packSet{}}
	}
	return b
}

// set returns the pack set of the weight file that w lies in, and w's
// offset in it; nil when w is not in a mapped weight file or nothing is
// kept.
func (c *packCache) set(w []byte) (*packSet, int64) {
	if c == nil {
		return nil, 0
	}
	id, off, ok := filepages.Lookup(w)
	if !ok || id == "" {
		return nil, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.sets[id]; s != nil {
		return s, off
	}
	version := buildid.Version()
	if version == "" {
		return nil, 0
	}
	full := fmt.Sprintf("forge cpu packs\x00%d\x00%s\x00%s\x00sgemm %s\x00conv %s\x00bf16 %s\x00%s\x00%+v",
		packfile.Version, version, id, gemm.Path(), gemm.Default().ConvPath(), gemm.BF16ConvPath(), runtime.GOARCH, cpu.X86)
	wsum := sha256.Sum256([]byte(id))
	s := &packSet{
		prefix: "packs-" + hex.EncodeToString(wsum[:8]) + "-",
		key:    packfile.KeySum(full),
		fresh:  map[string][]byte{},
		used:   map[string]bool{},
	}
	s.path = filepath.Join(c.dir, s.prefix+hex.EncodeToString(s.key[:8])+".bin")
	f, err := packfile.Open(s.path, s.key)
	if err == nil {
		s.file = f
		// A file in use is marked so once a day, so that pruneOthers
		// (which goes by modification time) never takes a stable one
		// for an abandoned one.
		if st, err := os.Stat(s.path); err == nil && time.Since(st.ModTime()) > 24*time.Hour {
			now := time.Now()
			os.Chtimes(s.path, now, now)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		s.why = err
	}
	c.sets[id] = s
	return s, off
}

// get returns the kept words of pack key, from the mapped file.
func (s *packSet) get(c *packCache, key string) ([]byte, bool) {
	if s == nil || s.file == nil {
		return nil, false
	}
	b, ok := s.file.Get(key)
	if ok {
		c.mu.Lock()
		s.used[key] = true
		c.mu.Unlock()
	}
	return b, ok
}

// put records words, a pack made in this process, for SavePacks.
func (s *packSet) put(c *packCache, key string, words []byte) {
	if s == nil {
		return
	}
	c.mu.Lock()
	s.fresh[key] = words
	c.mu.Unlock()
}

// SavePacks writes, for every mapped weight file whose weights this
// backend packed in memory, a pack file holding all of its packs (those
// read from the old file and the new ones), replacing the old file by
// rename, and removes that weight file's pack files of other builds that
// are an hour old or beyond the two newest (and abandoned files: see
// pruneOthers). It logs at debug level, on log (nil: nowhere), why
// a file was refused or could not be written, and returns the first
// write error: an unwritable directory only means that later processes
// pack again. Call it after the model's warm-up (every weight packed);
// packs made afterwards are kept by the next call.
func (b *Backend) SavePacks(log *slog.Logger) error {
	c := b.packs
	if c == nil {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for _, s := range c.sets {
		if s.why != nil {
			log.Debug("cpu: packed weights on disk refused; packing again", "file", s.path, "err", s.why)
			s.why = nil
		}
		if len(s.fresh) == 0 {
			continue
		}
		if err := s.save(c.dir); err != nil {
			log.Debug("cpu: packed weights not kept on disk", "dir", c.dir, "err", err)
			if first == nil {
				first = err
			}
			continue
		}
		log.Debug("cpu: packed weights kept on disk", "file", s.path, "new", len(s.fresh))
		clear(s.fresh)
	}
	return first
}

// save writes s's file: the old file's packs that check out and the
// fresh ones, in key order. The old file stays mapped (its packs are in
// use); the rename replaces only the name.
func (s *packSet) save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cpu: pack directory: %w", err)
	}
	all := map[string][]byte{}
	if s.file != nil {
		for _, k := range s.file.Keys() {
			if b, ok := s.file.Get(k); ok {
				all[k] = b
			}
		}
	}
	for k, b := range s.fresh {
		all[k] = b
	}
	w, err := packfile.Create(s.path, s.key)
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(all)) {
		if err := w.Add(k, all[k]); err != nil {
			w.Abort()
			return err
		}
		if _, fresh := s.fresh[k]; !fresh && !s.used[k] {
			// Copying read the pages of a pack this process does not
			// use (another precision's): out of its resident set.
			filepages.Release(all[k])
		}
	}
	if err := w.Commit(); err != nil {
		return err
	}
	pruneOthers(dir, s.prefix, s.path)
	return nil
}

// keepOthers is how many other builds' pack files of one weight file are
// kept at most, newest first: every rebuilt binary (each test binary of a
// modified checkout) writes its own, 130 MB for Kokoro.
const keepOthers = 2

// abandoned is how long a pack file of another weight file may go
// unmodified before pruneOthers removes it: a model removed from the
// cache or fetched again (a new identity) leaves its packs behind. A file
// in use is marked daily (see set), so only a model unused this long
// loses its packs, and packs again on its next use.
const abandoned = 30 * 24 * time.Hour

// pruneOthers removes the pack files of the weight file named by prefix
// other than self that are an hour old or beyond the keepOthers newest
// (with temporary files an hour old, left by a process killed while
// writing), and other weight files' pack files untouched for the
// abandoned period. Removing a file another process has mapped is
// harmless (its mapping stays); it only makes that build pack again in its
// next process.
func pruneOthers(dir, prefix, self string) {
	outfile.Prune(filepath.Join(dir, prefix+"*.bin"), self, keepOthers, time.Hour)
	all, _ := filepath.Glob(filepath.Join(dir, "packs-*.bin"))
	for _, o := range all {
		if strings.HasPrefix(filepath.Base(o), prefix) {
			continue
		}
		if st, err := os.Stat(o); err == nil && time.Since(st.ModTime()) > abandoned {
			os.Remove(o)
		}
	}
}
