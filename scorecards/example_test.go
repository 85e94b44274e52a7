package scorecards_test

import (
	"context"
	"fmt"

	"github.com/tensorforge/forge/pipeline"
	"github.com/tensorforge/forge/scorecards"
	"github.com/tensorforge/forge/stage"
)

// Building a scorecard from a run; scorecards.Save(flagValue, card) would
// then write it where --scorecard or $FORGE_SCORECARD_OUT says.
func Example() {
	p := pipeline.New("say")
	audio := pipeline.Then(pipeline.From(p, stage.FromSlice("text", []string{"Hi."})),
		stage.Map("synth", func(_ context.Context, s string) ([]float32, error) {
			return make([]float32, 24000), nil // one second at 24 kHz
		}))
	pipeline.To(audio, stage.Discard[[]float32]("speaker"))
	card := scorecards.New("say")
	card.AddModel("kokoro", "v1.0", "")
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	card.Record(p.Metrics())
	card.SetAudioOut(1.0)
	fmt.Println(card.Validate() == nil, card.TTFAMs != nil, card.RTF != nil)
	for _, s := range card.Stages {
		fmt.Println(s.Name, s.FramesIn != nil, s.FramesOut != nil)
	}
	// Output:
	// true true true
	// text false true
	// synth true true
	// speaker true false
}
