// Package pipeline composes stages (package stage) into a running graph:
// chains and simple DAGs (tee, merge), with one bounded channel per edge,
// one goroutine per stage, the first error cancelling everything, and
// per-stage metrics for the scorecard.
//
// A pipeline is built once and run once:
//
//	p := pipeline.New("listen")
//	pcm := pipeline.From(p, stage.FromPCM16("wav", r, 16000, 512))
//	segs := pipeline.Then(pcm, stage.Process("vad", vad))
//	text := pipeline.Then(segs, stage.Map("whisper", transcribe), pipeline.Buffer(2))
//	pipeline.To(text, stage.ToFunc("print", print))
//	err := p.Run(ctx)
//	m := p.Metrics()
//
// For services, [Input] and [Output] replace the source and the sink: the
// caller pushes frames with [Inlet.Send], pulls results with [Outlet.Recv],
// and ends the stream with [Inlet.Close]; [Pipeline.Start] and
// [Pipeline.Wait] replace Run.
//
// Wiring mistakes (a stage output that feeds nothing or feeds two stages, a
// duplicate stage name, ports of another pipeline) are reported by Start,
// not by panics while building.
package pipeline
