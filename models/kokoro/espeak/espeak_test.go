package espeak

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// engine returns the process's engine, skipping loudly when libespeak-ng
// is not installed.
func engine(t testing.TB) *Engine {
	t.Helper()
	e, err := Default()
	if errors.Is(err, ErrLibraryNotFound) {
		t.Skipf("ESPEAK-NG MISSING, test not run: %v (run: make deps, or %s)", err, InstallHint)
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestDefaultIsShared(t *testing.T) {
	e := engine(t)
	e2, err := Default()
	if err != nil || e2 != e {
		t.Fatalf("second Default() = %p, %v; want the same engine %p", e2, err, e)
	}
	if e.Version() == "" || e.DataPath() == "" || e.LibraryPath() == "" {
		t.Errorf("version %q, data %q, library %q: want all set", e.Version(), e.DataPath(), e.LibraryPath())
	}
	t.Logf("espeak-ng %s from %s, data %s", e.Version(), e.LibraryPath(), e.DataPath())
}

func TestPhonemize(t *testing.T) {
	e := engine(t)
	// Expected lines are what the phonemizer npm package 1.2.1 (espeak-ng
	// compiled to wasm) returns for the same text and voice; espeak-ng 1.51
	// gives the same for these.
	for _, c := range []struct {
		voice, text string
		want        []string
	}{
		{"en-us", "Hello world", []string{"həlˈoʊ wˈɜːld"}},
		{"en-us", "Hello, world!", []string{"həlˈoʊ", "wˈɜːld"}},
		{"en-us", "hi and bye", []string{"hˈaɪ ænd bˈaɪ"}},
		{"en", "Hello, world!", []string{"həlˈəʊ", "wˈɜːld"}},
		{"en-us", "The quick brown fox jumps over the lazy dog", []string{"ðə kwˈɪk bɹˈaʊn fˈɑːks dʒˈʌmps ˌoʊvɚ ðə lˈeɪzi dˈɑːɡ"}},
		// A clause without a primary stress gets one on its strongest
		// syllable: espeak-ng's intonation pass, which only synthesis runs
		// (espeak_TextToPhonemes would give "ænd" and "ˌɛni").
		{"en-us", "and", []string{"ˈænd"}},
		{"en-us", "if any, to sign", []string{"ɪf ˈɛni", "tə sˈaɪn"}},
		{"en-us", "", nil},
		{"en-us", "   ", nil},
		{"en-us", "a\x00b", []string{"ɐ bˈiː"}}, // NUL read as a space, not an end
	} {
		got, err := e.Phonemize(c.text, c.voice)
		if err != nil {
			t.Errorf("%s %q: %v", c.voice, c.text, err)
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %q = %q, want %q", c.voice, c.text, got, c.want)
		}
	}
}

func TestPhonemizeErrors(t *testing.T) {
	e := engine(t)
	if _, err := e.Phonemize("ok", "no-such-voice"); !errors.Is(err, ErrVoice) {
		t.Errorf("unknown voice: err = %v, want ErrVoice", err)
	}
	if _, err := e.Phonemize("ok", ""); !errors.Is(err, ErrVoice) {
		t.Errorf("empty voice: err = %v, want ErrVoice", err)
	}
	if _, err := e.Phonemize("bad \xff text", "en-us"); !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("invalid UTF-8: err = %v, want ErrInvalidUTF8", err)
	}
	// A failed voice switch leaves the engine usable.
	got, err := e.Phonemize("hi", "en-us")
	if err != nil || !slices.Equal(got, []string{"hˈaɪ"}) {
		t.Errorf("after errors: %q, %v", got, err)
	}
}

func TestMissingLibrary(t *testing.T) {
	_, err := load([]string{"/nonexistent/libespeak-ng.so.1"})
	if !errors.Is(err, ErrLibraryNotFound) && !errors.Is(err, ErrUnsupported) {
		t.Fatalf("err = %v, want ErrLibraryNotFound", err)
	}
	if errors.Is(err, ErrLibraryNotFound) && !strings.Contains(err.Error(), InstallHint) {
		t.Errorf("error %q does not name the install command %q", err, InstallHint)
	}
}

func TestConcurrentUse(t *testing.T) {
	e := engine(t)
	want := map[string][]string{}
	texts := []string{"Hello world", "The quick brown fox", "Is it really forty two degrees"}
	voices := []string{"en-us", "en"}
	for _, v := range voices {
		for _, s := range texts {
			got, err := e.Phonemize(s, v)
			if err != nil {
				t.Fatal(err)
			}
			want[v+"|"+s] = got
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				v, s := voices[(g+i)%2], texts[i%len(texts)]
				got, err := e.Phonemize(s, v)
				if err == nil && !slices.Equal(got, want[v+"|"+s]) {
					err = fmt.Errorf("%s %q = %q, want %q", v, s, got, want[v+"|"+s])
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func BenchmarkPhonemize(b *testing.B) {
	e := engine(b)
	const s = "The quick brown fox jumps over the lazy dog"
	for b.Loop() {
		if _, err := e.Phonemize(s, "en-us"); err != nil {
			b.Fatal(err)
		}
	}
}
