package espeak

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// InstallHint is the command that installs the library and its data on
// Debian and Ubuntu; errors about a missing library quote it.
const InstallHint = "apt-get install libespeak-ng1 espeak-ng-data"

// Errors returned by this package; match them with errors.Is.
var (
	// ErrLibraryNotFound means no libespeak-ng could be loaded.
	ErrLibraryNotFound = errors.New("espeak: libespeak-ng not found (install it with: " + InstallHint + "; on macOS: brew install espeak-ng)")
	// ErrInit means the library loaded but could not initialise, usually
	// because espeak-ng-data is missing or of another version.
	ErrInit = errors.New("espeak: initialisation failed")
	// ErrVoice means espeak-ng has no voice of the requested name.
	ErrVoice = errors.New("espeak: voice not found")
	// ErrInvalidUTF8 means the text given to Phonemize is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("espeak: text is not valid UTF-8")
	// ErrUnsupported means this operating system cannot load shared
	// libraries through purego.
	ErrUnsupported = errors.New("espeak: loading libespeak-ng is not supported on this platform")
)

// Engine is the process's handle on libespeak-ng. There is at most one per
// process because espeak-ng keeps its state in C globals; obtain it with
// [Default]. All methods are safe for concurrent use: each holds the
// engine's mutex for the whole of its call into the library.
type Engine struct {
	mu      sync.Mutex
	lib     *library // symbols; guarded by mu, as is the library's own state
	voice   string   // voice currently selected in the library; guarded by mu
	path    string   // file the library was loaded from
	version string   // espeak-ng version, e.g. "1.51"
	data    string   // espeak-ng-data directory in use
}

// The process-wide engine: espeak-ng cannot be loaded or initialised
// twice, so this is the explicit, documented device handle of the package.
var (
	defaultOnce   sync.Once
	defaultEngine *Engine
	defaultErr    error
)

// Default loads and initialises libespeak-ng on first use and returns the
// process's engine; later calls return the same engine, or the same error.
// A missing library yields an error wrapping [ErrLibraryNotFound] that
// names the install command.
func Default() (*Engine, error) {
	defaultOnce.Do(func() {
		defaultEngine, defaultErr = load(libraryCandidates())
	})
	return defaultEngine, defaultErr
}

// Version reports the espeak-ng version of the loaded library, e.g. "1.51".
func (e *Engine) Version() string { return e.version }

// DataPath reports the espeak-ng-data directory the library reads.
func (e *Engine) DataPath() string { return e.data }

// LibraryPath reports the file libespeak-ng was loaded from.
func (e *Engine) LibraryPath() string { return e.path }

// Phonemize translates text into IPA with the named espeak-ng voice (for
// example "en-us", or "en" for British English) and returns one phoneme
// string per clause, leaving out empty ones — the same lines the phonemizer
// npm package returns. Text holding a NUL byte is cut there by the C
// library, so NUL bytes are replaced by spaces first. Invalid UTF-8 is
// rejected with [ErrInvalidUTF8]; an unknown voice with [ErrVoice].
func (e *Engine) Phonemize(text, voice string) ([]string, error) {
	return e.phonemize(text, voice, traceIPA)
}

// PhonemizeTied is Phonemize with the letters of every multi-letter
// phoneme joined by tie ("t^ʃ", "a^ɪ" for tie '^'), as the phonemizer
// Python package's tie option writes them: misaki, Kokoro's own front-end
// for its languages other than English, reads the ties to map affricates
// and diphthongs onto the single symbols the model was trained with.
func (e *Engine) PhonemizeTied(text, voice string, tie rune) ([]string, error) {
	return e.phonemize(text, voice, tieMode(tie))
}

// phonemize is Phonemize in espeak-ng's phoneme mode.
func (e *Engine) phonemize(text, voice string, mode int32) ([]string, error) {
	if !utf8.ValidString(text) {
		return nil, ErrInvalidUTF8
	}
	if strings.IndexByte(text, 0) >= 0 {
		text = strings.ReplaceAll(text, "\x00", " ")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.selectVoice(voice); err != nil {
		return nil, err
	}
	return e.lib.phonemes(text, mode)
}

// selectVoice switches the library to voice unless it is already selected:
// reloading a voice re-reads its dictionary, which costs more than
// phonemising a sentence. e.mu must be held.
func (e *Engine) selectVoice(voice string) error {
	if voice == "" || strings.IndexByte(voice, 0) >= 0 {
		return fmt.Errorf("%w: %q", ErrVoice, voice)
	}
	if voice == e.voice {
		return nil
	}
	if status := e.lib.setVoiceByName(voice); status != statusOK {
		e.voice = "" // the library may have been left between voices
		return fmt.Errorf("%w: %q: %s", ErrVoice, voice, e.lib.statusMessage(status))
	}
	e.voice = voice
	return nil
}
