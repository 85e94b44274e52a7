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
//	err := p.Run(ctx)
//	card.Record(p.Metrics())               // wall, TTFA, per-stage metrics
//	card.SetAudioOut(seconds)              // and with it the RTF
//	card.RecordEngine(eng)                 // backend, device, engine counters
//	path, err := scorecards.Save(*scorecardFlag, card)
//
// The keys of a card (see [Card] for each one's meaning):
//
//   - required: schema, run_id, started_at, pipeline, host (os, arch,
//     cores, go; cpu optional), wall_seconds;
//   - the run: models (name, variant, sha256), audio_in_seconds,
//     audio_out_seconds, rtf, ttfa_ms, stages (per-stage frames, busy and
//     wait times, latency percentiles, queue_max), labels;
//   - the machine: backend, device, dispatches, peak_bytes (the process's
//     peak resident set), device_peak_bytes (the backend's peak buffer
//     bytes: GPU memory on a GPU);
//   - the graph engine: programs_compiled, graph_builds, transfers,
//     transfer_bytes (host<->device copies of partitioned programs).
//
// Keys are snake_case and stable because CI scrapes them; new optional
// keys may be added within v1, so a reader accepts cards written before
// them (those keys are then absent). A field the run cannot know is
// omitted, never written as zero: optional numbers are pointers.
//
// This package sits above package pipeline (the record layer above the
// flow layer): it imports pipeline to turn its metrics into stage rows, and
// graph to read an engine's counters; neither knows of scorecards.
package scorecards
