package listen_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"

	"github.com/tensorforge/forge/speech/listen"
)

// Transcribe a file: each utterance's text as soon as it is final.
func ExampleTranscriber_Transcribe() {
	ctx := context.Background()
	t, err := listen.New(ctx, listen.Config{Model: "tiny", Device: "cpu"}) // models fetched on first use
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()

	f, err := os.Open("../../../shared/data/jfk.wav")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	in, err := listen.File(f)
	if err != nil {
		log.Fatal(err)
	}
	var line strings.Builder
	res, err := t.Transcribe(ctx, in, listen.Options{}, func(s listen.Segment) error {
		line.WriteString(s.Text)
		if s.EndsUtterance {
			fmt.Println(strings.TrimSpace(line.String()))
			line.Reset()
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.0f s of %s\n", res.Duration, res.LanguageName)
	// Output:
	// And so my fellow Americans ask not what your country can do for you, ask what you can do for your country.
	// 11 s of english
}

// Stream the microphone until Ctrl-C (a build with -tags portaudio; the
// system's default capture device), printing each utterance as soon as
// the speaker pauses.
func ExampleMicrophone() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	t, err := listen.New(ctx, listen.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()
	_, err = t.Transcribe(ctx, listen.Microphone(""), listen.Options{Language: "en"}, func(s listen.Segment) error {
		fmt.Printf("[%6.2f → %6.2f] %s\n", s.Start, s.End, strings.TrimSpace(s.Text))
		return nil
	})
	if err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}
