package kokoro

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tensorforge/forge/weights"
	"github.com/tensorforge/forge/weights/safetensors"
)

// VoiceRows is the number of rows of a voice table: one style per
// utterance length 0…509 phonemes.
const VoiceRows = MaxPhonemes

// ErrUnknownVoice reports a voice name that is not in the table.
var ErrUnknownVoice = errors.New("kokoro: unknown voice")

// ErrBadVoiceSpec reports a voice mix that does not parse.
var ErrBadVoiceSpec = errors.New("kokoro: bad voice specification")

// Voices is the table of Kokoro's voices: per voice, a [510, 256] style
// table whose row n is the style for an utterance of n phonemes.
type Voices struct {
	tables map[string][]float32
	art    *weights.Artifact
}

// LoadVoices fetches (on first use) and opens the kokoro-voices artifact.
func LoadVoices(ctx context.Context) (*Voices, error) {
	a, err := weights.Load(ctx, weights.KokoroVoices)
	if err != nil {
		return nil, fmt.Errorf("kokoro: loading voices: %w", err)
	}
	v, err := NewVoices(a)
	if err != nil {
		a.Close()
		return nil, err
	}
	return v, nil
}

// NewVoices reads the voice tables of an opened kokoro-voices artifact
// (they alias its mapped file: keep it open until Close).
func NewVoices(a *weights.Artifact) (*Voices, error) {
	v := &Voices{tables: map[string][]float32{}, art: a}
	for _, name := range a.Names() {
		t, err := a.Tensor(name)
		if err != nil {
			return nil, fmt.Errorf("kokoro: %w", err)
		}
		if t.DType != safetensors.F32 || !slices.Equal(t.Shape, []int{VoiceRows, StyleSize}) {
			return nil, fmt.Errorf("kokoro: voice %s is %s%v, want F32[%d %d]", name, t.DType, t.Shape, VoiceRows, StyleSize)
		}
		f, err := t.Float32s()
		if err != nil {
			return nil, fmt.Errorf("kokoro: voice %s: %w", name, err)
		}
		v.tables[name] = f
	}
	if len(v.tables) == 0 {
		return nil, fmt.Errorf("kokoro: artifact %s holds no voices", a.ID)
	}
	return v, nil
}

// NewVoicesFromTables builds a voice table from memory (tests, custom
// voices); each table is VoiceRows×StyleSize float32, row-major.
func NewVoicesFromTables(tables map[string][]float32) (*Voices, error) {
	v := &Voices{tables: map[string][]float32{}}
	for name, t := range tables {
		if len(t) != VoiceRows*StyleSize {
			return nil, fmt.Errorf("kokoro: voice %s has %d values, want %d", name, len(t), VoiceRows*StyleSize)
		}
		v.tables[name] = t
	}
	return v, nil
}

// Close releases the mapped voice file.
func (v *Voices) Close() error {
	if v == nil || v.art == nil {
		return nil
	}
	err := v.art.Close()
	v.art = nil
	return err
}

// Names lists the voices, sorted.
func (v *Voices) Names() []string {
	names := make([]string, 0, len(v.tables))
	for n := range v.tables {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Voice is one voice, or a weighted mix of several: its style table.
type Voice struct {
	// Name is the specification it was made from ("af_heart" or
	// "af_heart,am_michael:0.3").
	Name string
	// Primary is the first voice named; its prefix gives the language
	// ("a…" American English, "b…" British).
	Primary string
	table   []float32
}

// Voice returns a voice by specification: NAME, or NAME[:WEIGHT] items
// joined by commas for a mix, whose style tables are averaged with the
// weights (default 1) normalised to sum to 1.
func (v *Voices) Voice(spec string) (*Voice, error) {
	items := strings.Split(spec, ",")
	type part struct {
		name string
		w    float64
	}
	var parts []part
	var sum float64
	for _, it := range items {
		it = strings.TrimSpace(it)
		name, ws, hasW := strings.Cut(it, ":")
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, fmt.Errorf("%w %q: empty voice name", ErrBadVoiceSpec, spec)
		}
		w := 1.0
		if hasW {
			var err error
			w, err = strconv.ParseFloat(strings.TrimSpace(ws), 64)
			if err != nil || !(w > 0) || math.IsInf(w, 0) {
				return nil, fmt.Errorf("%w %q: weight of %s must be a positive number", ErrBadVoiceSpec, spec, name)
			}
		}
		if _, ok := v.tables[name]; !ok {
			return nil, fmt.Errorf("%w %q (have %s)", ErrUnknownVoice, name, strings.Join(v.Names(), ", "))
		}
		parts = append(parts, part{name, w})
		sum += w
	}
	if len(parts) == 1 {
		return &Voice{Name: parts[0].name, Primary: parts[0].name, table: v.tables[parts[0].name]}, nil
	}
	mix := make([]float32, VoiceRows*StyleSize)
	acc := make([]float64, len(mix))
	for _, p := range parts {
		for i, x := range v.tables[p.name] {
			acc[i] += p.w / sum * float64(x)
		}
	}
	for i, x := range acc {
		mix[i] = float32(x)
	}
	return &Voice{Name: spec, Primary: parts[0].name, table: mix}, nil
}

// Style returns the style vector for an utterance of n phonemes (pads not
// counted): row n of the table, clamped to the table.
func (vc *Voice) Style(n int) []float32 {
	r := min(max(n, 0), VoiceRows-1)
	return vc.table[r*StyleSize : (r+1)*StyleSize]
}
