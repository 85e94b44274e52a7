package tokenizer

// EncodeHeap is Encode with every piece merged by the heap-based BPE, to
// check it against the linear scan used for short pieces.
func (t *Tokenizer) EncodeHeap(text string) []int32 {
	var s bpeScratch
	var out []int32
	for i := 0; i < len(text); {
		end := pieceEnd(text, i)
		if end-i == 1 {
			out = append(out, t.byteID[text[i]])
		} else {
			out = t.appendBPEHeap(out, text[i:end], &s)
		}
		i = end
	}
	return out
}
