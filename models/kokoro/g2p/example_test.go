package g2p_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/tensorforge/forge/models/kokoro/g2p"
)

// The say pipeline's front-end: chunks, each ready for the model.
func ExampleChunker() {
	front, err := g2p.NewEspeak(g2p.AmericanEnglish)
	if err != nil {
		fmt.Println(err) // names the package to install when espeak-ng is missing
		return
	}
	text := strings.NewReader("Hello world. The quick brown fox jumps over the lazy dog.")
	for chunk, err := range (&g2p.Chunker{G2P: front}).Chunks(context.Background(), text) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%d %q → %s (%d tokens)\n", chunk.Index, chunk.Text, chunk.Phonemes, chunk.Tokens())
	}
}
