package speech_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/speech"
	"github.com/tensorforge/forge/speech/listen"
	"github.com/tensorforge/forge/speech/say"
)

// Run both pipelines in one service: the models load once on one shared
// engine, and any number of requests may then call them concurrently.
// Here one request speaks a sentence and another hears it back.
func Example() {
	ctx := context.Background()
	eng, err := speech.NewEngine("cpu", 0)
	if err != nil {
		log.Fatal(err)
	}
	tts, err := say.New(ctx, say.Config{Engine: eng})
	if err != nil {
		log.Fatal(err)
	}
	defer tts.Close()
	stt, err := listen.New(ctx, listen.Config{Engine: eng, Model: "tiny"})
	if err != nil {
		log.Fatal(err)
	}
	defer stt.Close()

	// A speech request: its audio, here kept in memory at 16 kHz.
	clip := audio.Clip{SampleRate: 16000}
	_, err = tts.Synthesize(ctx, say.String("Good morning, how are you today?"), say.Options{Rate: clip.SampleRate},
		func(a say.Audio) error { clip.Samples = append(clip.Samples, a.Samples...); return nil })
	if err != nil {
		log.Fatal(err)
	}

	// A transcription request on that audio.
	in, err := listen.PCM(clip)
	if err != nil {
		log.Fatal(err)
	}
	var text strings.Builder
	if _, err := stt.Transcribe(ctx, in, listen.Options{Language: "en"}, func(s listen.Segment) error {
		text.WriteString(s.Text)
		return nil
	}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.TrimSpace(text.String()))
	// Output: Good morning, how are you today?
}
