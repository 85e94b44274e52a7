package say_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/tensorforge/forge/audio"
	"github.com/tensorforge/forge/speech/say"
)

// Speak to a WAV file, written block by block as the speech is ready.
func ExampleSynthesizer_Synthesize() {
	ctx := context.Background()
	s, err := say.New(ctx, say.Config{Device: "cpu"}) // Kokoro fetched on first use, loaded and warmed once
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	dir, err := os.MkdirTemp("", "say-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	f, err := os.Create(filepath.Join(dir, "hello.wav"))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	w, err := audio.NewWAVWriter(f, audio.S16Mono(16000))
	if err != nil {
		log.Fatal(err)
	}
	res, err := s.Synthesize(ctx, say.String("Hello from Forge."), say.Options{Voice: "af_heart", Rate: 16000},
		func(a say.Audio) error { return w.Write(a.Samples) })
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	clip, err := audio.ReadWAVFile(f.Name())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(clip.SampleRate, "Hz;", res.Samples == int64(len(clip.Samples)), "samples written; over a second:", res.Seconds() > 1)
	// Output: 16000 Hz; true samples written; over a second: true
}

// Speak an LLM's token stream: each sentence is spoken as soon as its end
// arrives, while the model is still writing the next one.
func ExampleTokens() {
	ctx := context.Background()
	s, err := say.New(ctx, say.Config{Device: "cpu"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	tokens := make(chan string)
	go func() { // stands in for a model streaming its answer
		defer close(tokens)
		for _, tok := range strings.SplitAfter("The answer is forty two. Anything else?", " ") {
			tokens <- tok
		}
	}()
	var blocks int
	res, err := s.Synthesize(ctx, say.Tokens(tokens), say.Options{}, func(a say.Audio) error {
		blocks++ // a player would play a.Samples here
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("spoken in more than one block:", blocks > 1, "at", res.Rate, "Hz")
	// Output: spoken in more than one block: true at 24000 Hz
}
