//go:build linux || darwin || freebsd || netbsd

package espeak

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Constants from espeak-ng's speak_lib.h and espeak_ng.h.
const (
	statusOK              = 0          // ENS_OK
	statusStopped         = 0x10000EFF // ENS_SPEECH_STOPPED: our callback ended synthesis
	outputModeSynchronous = 0x0001     // ENOUTPUT_MODE_SYNCHRONOUS: no audio device
	posCharacter          = 1          // POS_CHARACTER
	charsAuto             = 0          // espeakCHARS_AUTO, as espeak_Synth's flags=0 in phonemizer
	traceIPA              = 0x02       // phoneme trace as IPA, no tie, no separator
	traceTie              = 0x80       // espeakPHONEMES_TIE: bits 8-23 hold the tie character
	paramRate             = 1          // espeakRATE, words per minute

	// fastRate is the speaking rate the engine synthesises at. Speed only
	// scales durations and pauses, after the phonemes are fixed, so the
	// trace is the same as at the default 175 wpm; but the audio that is
	// generated (every clause but the last, see phonemes) has 2.5 times
	// fewer samples. 450 and above would switch espeak-ng to its Sonic
	// speed-up, which generates at 175 wpm and then compresses: slower.
	fastRate = 449
)

// library holds the libespeak-ng and libc entry points the engine calls.
type library struct {
	initializePath    func(path *byte)
	initialize        func(context *uintptr) uint32
	initializeOutput  func(mode int32, bufferLength int32, device *byte) uint32
	clearErrorContext func(context *uintptr)
	statusCodeMessage func(status uint32, buf *byte, length uintptr)
	setVoice          func(name string) uint32
	info              func(pathData **byte) *byte
	synth             func(text *byte, size uintptr, position uint32, positionType int32, endPosition uint32, flags uint32, uniqueID *uint32, userData uintptr) uint32
	setSynthCallback  func(cb uintptr)
	setPhonemeTrace   func(mode int32, stream uintptr)
	setParameter      func(parameter int32, value int32, relative int32) uint32
	textToPhon        func(textptr *uintptr, textmode int32, phonememode int32) *byte

	// libc, for the in-memory stream espeak-ng writes its phoneme trace to.
	openMemstream func(bufp **byte, sizep *uintptr) uintptr
	fclose        func(stream uintptr) int32
	fflush        func(stream uintptr) int32
	malloc        func(size uintptr) *memCell
	free          func(p *byte)
	cell          *memCell // C memory that open_memstream reports its buffer in

	// State of the synthesis callback during a trace call.
	stream    uintptr // the trace stream
	stopAfter int     // stop synthesising once this many lines are traced; 0: never

	fallbacks int // phonemes calls that needed the full synthesis (for tests)
}

// memCell is the C-side pair (char *buf; size_t size) open_memstream fills.
// It lives in C memory because the C library keeps writing to it between
// calls, which Go memory must not be exposed to.
type memCell struct {
	buf  *byte
	size uintptr
}

// load opens the first loadable file among candidates, binds its symbols
// and initialises espeak-ng with its default data directory.
func load(candidates []string) (*Engine, error) {
	handle, path, err := dlopenFirst(candidates)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLibraryNotFound, err)
	}
	libc, libcPath, err := dlopenFirst(libcCandidates())
	if err != nil {
		return nil, fmt.Errorf("espeak: C library: %w", err)
	}
	lib := &library{}
	if err := bind(handle, path, []symbol{
		{"espeak_ng_InitializePath", &lib.initializePath},
		{"espeak_ng_Initialize", &lib.initialize},
		{"espeak_ng_InitializeOutput", &lib.initializeOutput},
		{"espeak_ng_ClearErrorContext", &lib.clearErrorContext},
		{"espeak_ng_GetStatusCodeMessage", &lib.statusCodeMessage},
		{"espeak_ng_SetVoiceByName", &lib.setVoice},
		{"espeak_Info", &lib.info},
		{"espeak_ng_Synthesize", &lib.synth},
		{"espeak_SetSynthCallback", &lib.setSynthCallback},
		{"espeak_SetPhonemeTrace", &lib.setPhonemeTrace},
		{"espeak_ng_SetParameter", &lib.setParameter},
		{"espeak_TextToPhonemes", &lib.textToPhon},
	}); err != nil {
		return nil, fmt.Errorf("%w (espeak-ng 1.49 or newer is needed)", err)
	}
	if err := bind(libc, libcPath, []symbol{
		{"open_memstream", &lib.openMemstream},
		{"fclose", &lib.fclose},
		{"fflush", &lib.fflush},
		{"malloc", &lib.malloc},
		{"free", &lib.free},
	}); err != nil {
		return nil, err
	}
	lib.cell = lib.malloc(unsafe.Sizeof(memCell{}))
	if lib.cell == nil {
		return nil, fmt.Errorf("%w: out of C memory", ErrInit)
	}

	lib.initializePath(nil) // ESPEAK_DATA_PATH, else the compiled-in directory
	var errCtx uintptr
	if status := lib.initialize(&errCtx); status != statusOK {
		lib.clearErrorContext(&errCtx)
		return nil, fmt.Errorf("%w: %s (data directory %q; install the data with: %s)",
			ErrInit, lib.statusMessage(status), dataPathHint(lib), InstallHint)
	}
	if status := lib.initializeOutput(outputModeSynchronous, 0, nil); status != statusOK {
		return nil, fmt.Errorf("%w: output setup: %s", ErrInit, lib.statusMessage(status))
	}
	lib.setSynthCallback(purego.NewCallback(lib.onAudio))
	var dataPtr *byte
	version := goString(lib.info(&dataPtr))
	return &Engine{lib: lib, path: path, version: version, data: goString(dataPtr)}, nil
}

// symbol pairs a C symbol name with the Go function variable bound to it.
type symbol struct {
	name string
	fn   any
}

// dlopenFirst opens the first loadable file among candidates.
func dlopenFirst(candidates []string) (uintptr, string, error) {
	var tried []error
	for _, c := range candidates {
		h, err := purego.Dlopen(c, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err == nil {
			return h, c, nil
		}
		tried = append(tried, err)
	}
	return 0, "", fmt.Errorf("tried %s: %w", strings.Join(candidates, ", "), errors.Join(tried...))
}

// bind resolves each symbol in the library handle and binds it.
func bind(handle uintptr, path string, syms []symbol) error {
	for _, s := range syms {
		addr, err := purego.Dlsym(handle, s.name)
		if err != nil {
			return fmt.Errorf("espeak: %s has no %s: %w", path, s.name, err)
		}
		purego.RegisterFunc(s.fn, addr)
	}
	return nil
}

// dataPathHint names the data directory espeak-ng looks in, for errors.
func dataPathHint(lib *library) string {
	if p := os.Getenv("ESPEAK_DATA_PATH"); p != "" {
		return p
	}
	var dataPtr *byte
	lib.info(&dataPtr)
	return goString(dataPtr)
}

// setVoiceByName selects an espeak-ng voice and the fast synthesis rate
// and returns the status code.
func (l *library) setVoiceByName(name string) uint32 {
	if status := l.setVoice(name); status != statusOK {
		return status
	}
	return l.setParameter(paramRate, fastRate, 0)
}

// statusMessage renders an espeak_ng_STATUS as espeak-ng's own text.
func (l *library) statusMessage(status uint32) string {
	buf := make([]byte, 512)
	l.statusCodeMessage(status, &buf[0], uintptr(len(buf)))
	n := 0
	for n < len(buf) && buf[n] != 0 {
		n++
	}
	return fmt.Sprintf("%s (status 0x%08x)", buf[:n], status)
}

// phonemes returns espeak-ng's IPA for text, one string per clause,
// leaving out empty ones: the lines of the phoneme trace espeak_Synth
// writes, which is how the phonemizer npm package obtains IPA. The trace
// is needed, rather than espeak_TextToPhonemes alone, because only
// synthesis runs espeak-ng's intonation pass, which promotes the
// strongest syllable of a clause without primary stress (a lone "and",
// "any", "for") to primary stress.
//
// Synthesis is slow because it generates audio, yet espeak-ng traces each
// clause before generating its audio. So espeak_TextToPhonemes first
// counts the clauses (and gives their phonemes, stress aside), and the
// synthesis callback aborts once the trace holds that many lines: a
// one-clause piece, the common case, then costs no audio at all. If the
// traced phonemes, stress marks aside, differ from espeak_TextToPhonemes's
// (a clause missed), the text is synthesised again in full.
//
// mode is espeak-ng's phoneme mode: traceIPA, or with tieMode's bits.
func (l *library) phonemes(text string, mode int32) ([]string, error) {
	return l.phonemesChecked(text, l.textToPhonemes(text, mode), mode)
}

// tieMode returns the IPA phoneme mode that joins the letters of a
// multi-letter phoneme with tie.
func tieMode(tie rune) int32 { return traceIPA | traceTie | int32(tie)<<8 }

// phonemesChecked is phonemes with espeak_TextToPhonemes's clauses of
// text given.
func (l *library) phonemesChecked(text string, plain []string, mode int32) ([]string, error) {
	lines, err := l.trace(text, len(plain), mode)
	if err != nil {
		return nil, err
	}
	lines = nonEmpty(lines)
	if equalUnstressed(lines, nonEmpty(plain)) {
		return lines, nil
	}
	l.fallbacks++
	lines, err = l.trace(text, 0, mode)
	return nonEmpty(lines), err
}

// textToPhonemes runs espeak_TextToPhonemes over text and returns one
// string per clause, empty ones included.
func (l *library) textToPhonemes(text string, mode int32) []string {
	buf := make([]byte, len(text)+1) // NUL-terminated copy the library reads
	copy(buf, text)
	// The cursor is a uintptr, not a pointer: the library advances it into
	// buf (and sets it to 0 at the end), so the garbage collector must not
	// see it as a Go pointer; buf itself is kept alive below.
	cursor := uintptr(unsafe.Pointer(&buf[0]))
	var out []string
	for i := 0; cursor != 0 && i <= len(buf); i++ {
		out = append(out, goString(l.textToPhon(&cursor, charsAuto, mode)))
	}
	runtime.KeepAlive(buf)
	return out
}

// trace synthesises text with the phoneme trace written to an in-memory
// stream and returns the trace's lines. With stopAfter > 0 synthesis stops
// once that many lines are written.
func (l *library) trace(text string, stopAfter int, mode int32) ([]string, error) {
	buf := make([]byte, len(text)+1) // NUL-terminated copy the library reads
	copy(buf, text)
	*l.cell = memCell{}
	stream := l.openMemstream(&l.cell.buf, &l.cell.size)
	if stream == 0 {
		return nil, errors.New("espeak: open_memstream failed")
	}
	l.stream, l.stopAfter = stream, stopAfter
	l.setPhonemeTrace(mode, stream)
	status := l.synth(&buf[0], uintptr(len(buf)), 0, posCharacter, 0, 0, nil, 0)
	runtime.KeepAlive(buf)
	l.setPhonemeTrace(0, 0)
	l.stream, l.stopAfter = 0, 0
	l.fclose(stream) // flushes: cell now holds the whole trace
	trace := ""
	if l.cell.buf != nil {
		trace = string(unsafe.Slice(l.cell.buf, l.cell.size))
		l.free(l.cell.buf)
	}
	*l.cell = memCell{}
	if status != statusOK && status != statusStopped {
		return nil, fmt.Errorf("espeak: synthesis: %s", l.statusMessage(status))
	}
	return strings.Split(strings.TrimSuffix(trace, "\n"), "\n"), nil
}

// onAudio is espeak-ng's synthesis callback: the audio is not wanted, and
// once the trace holds stopAfter lines it stops the synthesis (a non-zero
// return aborts espeak_Synth).
func (l *library) onAudio(wav, samples, events uintptr) uintptr {
	if l.stopAfter <= 0 || l.stream == 0 {
		return 0
	}
	l.fflush(l.stream) // publishes the trace so far in l.cell
	if l.cell.buf == nil {
		return 0
	}
	n := 0
	for _, c := range unsafe.Slice(l.cell.buf, l.cell.size) {
		if c == '\n' {
			n++
		}
	}
	if n >= l.stopAfter {
		return 1
	}
	return 0
}

// nonEmpty returns the non-empty strings of ss.
func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// unstressed deletes the stress marks ˈ and ˌ.
var unstressed = strings.NewReplacer("ˈ", "", "ˌ", "")

// equalUnstressed reports whether a and b hold the same phonemes once
// stress marks are removed.
func equalUnstressed(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if unstressed.Replace(a[i]) != unstressed.Replace(b[i]) {
			return false
		}
	}
	return true
}

// goString copies a NUL-terminated C string into Go memory.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
