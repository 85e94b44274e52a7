// Package scorecards is the record of a run: the forge.scorecard/v1 JSON
// schema as Go types, a writer (--scorecard FILE, or $FORGE_SCORECARD_OUT so
// CI can collect without flags), a reader that validates and names missing
// fields, and a diff that compares two scorecards or two sets of them metric
// by metric for CI gates.
//
// A command fills a card in three steps:
//
//	card := scorecards.New("say")          // schema, run id, host facts
//	card.AddModel("kokoro", "v1.0-int8", sha)
//	card.Backend, card.Device = "cpu", "avx512"
//	err := p.Run(ctx)
//	card.Record(p.Metrics())               // wall, TTFA, per-stage metrics
//	card.SetAudioOut(seconds)              // and with it the RTF
//	path, err := scorecards.Save(*scorecardFlag, card)
//
// Keys are snake_case and stable because CI scrapes them. A field the run
// cannot know is omitted, never written as zero: optional numbers are
// pointers.
//
// This package sits above package pipeline (the record layer above the
// flow layer): it imports pipeline to turn its metrics into stage rows;
// pipeline knows nothing of scorecards.
package scorecards
