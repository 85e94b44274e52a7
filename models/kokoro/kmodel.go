package kokoro

import (
	"github.com/tensorforge/forge/graph"
	"github.com/tensorforge/forge/models/param"
)

// kmodel is KModel (hexgrad/kokoro model.py): the module tree, read from
// the weights' root scope. Model runs it as three graphs (see the package
// doc): durationStage and textEncoder.forward, prosodyStage, then the
// decoder's features, its generator's sources and the generator.
type kmodel struct {
	bert        albert
	bertEncoder linear // bert_encoder: 768 → 512
	predictor   prosodyPredictor
	textEncoder textEncoder
	// decoder runs its convolutions in bfloat16 where the backend can;
	// decoder32 is the same weights in float32 throughout (Model.Float32).
	// The precision is chosen here, once, for every convolution below.
	decoder, decoder32 decoder
}

func newKModel(s *param.Scope) (*kmodel, error) {
	k := &kmodel{
		bert:        newAlbert(s.Sub("bert")),
		bertEncoder: newLinear(s.Sub("bert_encoder")),
		predictor:   newProsodyPredictor(s.Sub("predictor")),
		textEncoder: newTextEncoder(s.Sub("text_encoder")),
		decoder:     newDecoder(s.Sub("decoder"), true),
		decoder32:   newDecoder(s.Sub("decoder"), false),
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return k, nil
}

// stage1 holds the outputs of the duration branch of the text stage for
// one utterance.
type stage1 struct {
	durFloat graph.Tensor // [1, T] f32
	dur      graph.Tensor // [T] i64
	d        graph.Tensor // [1, T, 640]: duration-encoder features, aligned for F0/N
}

// durationStage builds the part of the text stage that reads the style:
// ALBERT, the duration encoder and head. The rest of it, the text encoder
// (t_en [1, 512, T], aligned for the decoder), depends on the ids alone.
func (k *kmodel) durationStage(ids, style, speed graph.Tensor) stage1 {
	s := style.Slice(1, styleDim, 2*styleDim) // prosody half: ref_s[:, 128:]
	dEn := k.bertEncoder.forward(k.bert.forward(ids))
	d := k.predictor.durEncoder.forward(dEn, s)
	df, di := k.predictor.durations(d, speed)
	return stage1{durFloat: df, dur: di, d: d}
}

// stage2 holds the prosody stage's outputs.
type stage2 struct {
	f0, n graph.Tensor // [1, 2F]
	asr   graph.Tensor // [1, 512, F]
}

// prosodyStage aligns the text-stage features to frames by repeating each
// phoneme's column dur[i] times (the 0/1 alignment matrix product of the
// reference, done as a gather) and predicts F0 and energy (the energy's
// convolutions in float32 too with float32).
func (k *kmodel) prosodyStage(d, tEn, dur, style graph.Tensor, frames int, float32 bool) stage2 {
	s := style.Slice(1, styleDim, 2*styleDim)
	en := d.RepeatInterleave(dur, 1, frames)    // [1, F, 640]
	asr := tEn.RepeatInterleave(dur, 2, frames) // [1, 512, F]
	f0, nrg := k.predictor.f0n(en, s, float32)
	return stage2{f0: f0, n: nrg, asr: asr}
}
