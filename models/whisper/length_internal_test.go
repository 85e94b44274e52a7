package whisper

import "testing"

// TestEncodeFrames: the frames a window encodes, by its frames of audio.
func TestEncodeFrames(t *testing.T) {
	for _, c := range []struct {
		span          EncodeLength
		frames, width int
	}{
		{RealLength, 0, 100},
		{RealLength, 1, 100},
		{RealLength, 50, 100},
		{RealLength, 51, 200},
		{RealLength, 109, 200},   // cards_001, 1.1 s
		{RealLength, 500, 600},   // 5 s
		{RealLength, 1100, 1200}, // jfk, 11 s
		{RealLength, 2950, 3000},
		{RealLength, 2951, 3000},
		{RealLength, 3000, 3000},
		{FullWindow, 1, 3000},
		{FullWindow, 3000, 3000},
	} {
		m := &Model{cfg: Config{AudioCtx: 1500}, span: c.span}
		if got := m.encodeFrames(c.frames); got != c.width {
			t.Errorf("%v, %d frames of audio: encodes %d, want %d", c.span, c.frames, got, c.width)
		}
	}
}
