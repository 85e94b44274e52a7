package vad_test

import (
	"slices"
	"testing"
	"time"

	"github.com/tensorforge/forge/models/vad"
)

// FuzzSegmenter feeds arbitrary probability sequences and option sets to
// the streaming segmenter and checks it against the naive transcription of
// get_speech_timestamps; segments must also be ordered and inside the
// stream.
func FuzzSegmenter(f *testing.F) {
	f.Add([]byte{0, 0, 200, 200, 200, 200, 200, 200, 200, 200, 10, 10, 10, 10, 10, 10}, uint8(0), uint8(3), uint16(300))
	f.Add([]byte{255, 255, 255, 90, 90, 90, 255, 255, 255, 255, 255, 0}, uint8(7), uint8(1), uint16(1))
	f.Add([]byte{128, 127, 89, 90, 91, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 0, 0, 0, 0, 0, 0}, uint8(200), uint8(40), uint16(511))
	f.Fuzz(func(t *testing.T, raw []byte, knob, pad uint8, tail uint16) {
		if len(raw) == 0 || len(raw) > 4000 {
			return
		}
		o := vad.DefaultOptions()
		o.SpeechPad = time.Duration(pad) * time.Millisecond
		o.MinSilence = time.Duration(knob%16) * 25 * time.Millisecond
		o.MinSpeech = time.Duration(knob/16) * 40 * time.Millisecond
		if knob&1 == 1 {
			o.MaxSpeech = time.Duration(300+int(knob)*10) * time.Millisecond
			o.SplitAtLastSilence = knob&2 == 2
		}
		probs := make([]float32, len(raw))
		for i, b := range raw {
			probs[i] = float32(b) / 255
		}
		total := int64(512*(len(raw)-1)) + 1 + int64(tail%512)
		want := referenceSegments(probs, total, 16000, o)
		got, err := vad.Segments(probs, total, 16000, 512, o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("options %+v, %d samples:\n got %v\nwant %v", o, total, got, want)
		}
		for i, s := range got {
			if s.Start < 0 || s.End > total || s.Start > s.End || i > 0 && s.Start < got[i-1].Start {
				t.Fatalf("segment %d %v is out of order or outside [0, %d)", i, s, total)
			}
		}
	})
}
