//go:build linux || darwin || freebsd || netbsd

package espeak

import (
	"slices"
	"testing"
)

func TestTraceStopsAfterClauses(t *testing.T) {
	e := engine(t)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.selectVoice("en-us"); err != nil {
		t.Fatal(err)
	}
	const text = "one, two and, three"
	full, err := e.lib.trace(text, 0, traceIPA)
	if err != nil {
		t.Fatal(err)
	}
	want := nonEmpty(full)
	if len(want) != 3 {
		t.Fatalf("full trace %q: want three clauses", want)
	}
	plain := e.lib.textToPhonemes(text, traceIPA)
	if !equalUnstressed(want, nonEmpty(plain)) {
		t.Fatalf("espeak_TextToPhonemes %q and the trace %q differ beyond stress", plain, want)
	}
	// Stopping after the first clause leaves the others out.
	short, err := e.lib.trace(text, 1, traceIPA)
	if err != nil {
		t.Fatal(err)
	}
	if got := nonEmpty(short); !slices.Equal(got, want[:1]) {
		t.Errorf("trace stopped after one line = %q, want %q", got, want[:1])
	}
	// The checked path gives the full trace, falling back to a full
	// synthesis when espeak_TextToPhonemes miscounts the clauses (here:
	// the last two merged, so the trace would stop one clause short).
	merged := []string{plain[0], plain[1] + " " + plain[2]}
	for _, c := range []struct {
		plain    []string
		fallback bool
	}{{plain, false}, {merged, true}} {
		before := e.lib.fallbacks
		got, err := e.lib.phonemesChecked(text, c.plain, traceIPA)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("phonemesChecked with %d clauses = %q, want %q", len(c.plain), got, want)
		}
		if fell := e.lib.fallbacks > before; fell != c.fallback {
			t.Errorf("phonemesChecked with %d clauses: fallback %v, want %v", len(c.plain), fell, c.fallback)
		}
	}
}
