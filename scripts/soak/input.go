package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/tensorforge/forge/audio"
)

// licenceFiles is prose every Debian system carries (base-files): about
// 19,000 words in these five.
var licenceFiles = []string{
	"/usr/share/common-licenses/GPL-3",
	"/usr/share/common-licenses/GPL-2",
	"/usr/share/common-licenses/Apache-2.0",
	"/usr/share/common-licenses/MPL-2.0",
	"/usr/share/common-licenses/LGPL-2.1",
}

// speakable matches the words kept from the licence texts: no addresses,
// section numbers or rules of dashes, which only make the prose odd.
var speakable = regexp.MustCompile(`^[A-Za-z("][A-Za-z0-9,.;:()"'!?-]{0,24}$`)

// soakText returns c.words words of prose, lines of about 100 characters.
func soakText(c *config) (string, error) {
	files := c.licences
	if c.text != "" {
		files = []string{c.text}
	}
	var words []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("prose for say (give -text FILE): %w", err)
		}
		for _, w := range strings.Fields(string(b)) {
			if c.text != "" || speakable.MatchString(w) {
				words = append(words, w)
			}
		}
	}
	if len(words) == 0 {
		return "", fmt.Errorf("no words in %s", strings.Join(files, ", "))
	}
	var b strings.Builder
	line := 0
	for i := range c.words {
		w := words[i%len(words)]
		if line > 0 && line+len(w) >= 100 {
			b.WriteByte('\n')
			line = 0
		} else if line > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	b.WriteByte('\n')
	return b.String(), nil
}

// rate is the sample rate of the shared clips and of the soak audio.
const rate = 16000

// soakClips are the speech clips of ../shared/data the soak audio is made
// of (goforward.raw is 16 kHz 16-bit mono without a header).
var soakClips = []string{"jfk.wav", "silero-test.wav", "cards/001.wav", "cards/002.wav", "cards/003.wav", "cards/004.wav", "cards/005.wav", "goforward.raw"}

// writeSoakAudio writes seconds of 16 kHz speech to path: the shared clips
// in a seeded random order, each followed by 0.1–2 s of silence, so that
// the VAD's segments and Whisper's windows vary as in a real recording.
func writeSoakAudio(path, shared string, seconds int) error {
	var clips [][]float32
	for _, name := range soakClips {
		p := filepath.Join(shared, "data", name)
		var c audio.Clip
		var err error
		if strings.HasSuffix(name, ".raw") {
			c, err = audio.ReadRawFile(p, audio.S16Mono(rate))
		} else {
			c, err = audio.ReadWAVFile(p)
		}
		if err != nil {
			return fmt.Errorf("soak audio: %w", err)
		}
		if c.SampleRate != rate {
			return fmt.Errorf("soak audio: %s is %d Hz, want %d", p, c.SampleRate, rate)
		}
		clips = append(clips, c.Samples)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("soak audio: %w", err)
	}
	w, err := audio.NewWAVWriter(f, audio.S16Mono(rate))
	if err != nil {
		f.Close()
		return fmt.Errorf("soak audio: %w", err)
	}
	rng := rand.New(rand.NewPCG(15, 15))
	silence := make([]float32, 2*rate)
	for n := 0; n < seconds*rate; {
		c := clips[rng.IntN(len(clips))]
		gap := silence[:rate/10+rng.IntN(2*rate-rate/10)]
		if err := w.Write(c); err != nil {
			f.Close()
			return fmt.Errorf("soak audio: %w", err)
		}
		if err := w.Write(gap); err != nil {
			f.Close()
			return fmt.Errorf("soak audio: %w", err)
		}
		n += len(c) + len(gap)
	}
	if err := w.Close(); err != nil {
		f.Close()
		return fmt.Errorf("soak audio: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("soak audio: %w", err)
	}
	return nil
}
