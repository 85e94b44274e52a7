package tokenizer

// merge is what one BPE merge rule turns a pair of adjacent tokens into.
type merge struct {
	rank int32 // position in the merges list; lower merges first
	id   int32 // the merged token
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// bpeScratch holds the working arrays of one Encode call, reused across its
// pieces.
type bpeScratch struct {
	ids        []int32
	prev, next []int32
	heap       []candidate
}

// candidate is a merge that may apply at symbol pos (the left one).
type candidate struct {
	rank, pos   int32
	left, right int32 // the ids the pair held when the candidate was made
	id          int32
}

func (c candidate) less(d candidate) bool {
	return c.rank < d.rank || (c.rank == d.rank && c.pos < d.pos)
}

// appendBPE appends the tokens of one pre-tokenized piece to dst. It applies
// the lowest-ranked merge first, the leftmost on a tie, as Hugging Face's BPE
// does.
func (t *Tokenizer) appendBPE(dst []int32, piece string, s *bpeScratch) []int32 {
	n := len(piece)
	if n == 1 {
		return append(dst, t.byteID[piece[0]])
	}
	if n <= shortPiece {
		return t.appendBPEShort(dst, piece, s)
	}
	return t.appendBPEHeap(dst, piece, s)
}

// appendBPEHeap is appendBPE for long pieces (a long run of one letter, say),
// where the linear scan would cost O(n²).
// It keeps a heap of candidate merges over a linked list of symbols: O(n log n).
func (t *Tokenizer) appendBPEHeap(dst []int32, piece string, s *bpeScratch) []int32 {
	n := len(piece)
	s.ids, s.prev, s.next = s.ids[:0], s.prev[:0], s.next[:0]
	for i := 0; i < n; i++ {
		s.ids = append(s.ids, t.byteID[piece[i]])
		s.prev = append(s.prev, int32(i-1))
		s.next = append(s.next, int32(i+1))
	}
	s.next[n-1] = -1
	s.heap = s.heap[:0]
	for i := 0; i+1 < n; i++ {
		s.push(t, int32(i), int32(i+1))
	}
	for len(s.heap) > 0 {
		c := s.pop()
		r := s.next[c.pos]
		if s.ids[c.pos] != c.left || r < 0 || s.ids[r] != c.right {
			continue // stale: a neighbour merged since this candidate was made
		}
		s.ids[c.pos] = c.id
		s.ids[r] = -1
		rr := s.next[r]
		s.next[c.pos] = rr
		if rr >= 0 {
			s.prev[rr] = c.pos
			s.push(t, c.pos, rr)
		}
		if p := s.prev[c.pos]; p >= 0 {
			s.push(t, p, c.pos)
		}
	}
	for i := int32(0); i >= 0; i = s.next[i] {
		dst = append(dst, s.ids[i])
	}
	return dst
}

// shortPiece is the length up to which a linear scan for the next merge
// beats the heap.
const shortPiece = 48

// appendBPEShort is appendBPE for short pieces: it keeps the rank of each
// adjacent pair in an array and scans it for the lowest, looking up only the
// two pairs that a merge changes.
func (t *Tokenizer) appendBPEShort(dst []int32, piece string, s *bpeScratch) []int32 {
	const none = int32(1<<31 - 1)
	ids := s.ids[:0]
	for i := 0; i < len(piece); i++ {
		ids = append(ids, t.byteID[piece[i]])
	}
	ranks := s.prev[:0] // rank of the pair (ids[i], ids[i+1])
	rank := func(i int) int32 {
		if m, ok := t.merges[pairKey(ids[i], ids[i+1])]; ok {
			return m.rank
		}
		return none
	}
	for i := 0; i+1 < len(ids); i++ {
		ranks = append(ranks, rank(i))
	}
	for len(ids) > 1 {
		best, at := none, -1
		for i, r := range ranks {
			if r < best {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		ids[at] = t.merges[pairKey(ids[at], ids[at+1])].id
		ids = append(ids[:at+1], ids[at+2:]...)
		ranks = append(ranks[:at], ranks[at+1:]...)
		if at < len(ranks) {
			ranks[at] = rank(at)
		}
		if at > 0 {
			ranks[at-1] = rank(at - 1)
		}
	}
	s.ids, s.prev = ids, ranks
	return append(dst, ids...)
}

// push adds the merge of symbols a and b (adjacent, a left) if one exists.
func (s *bpeScratch) push(t *Tokenizer, a, b int32) {
	m, ok := t.merges[pairKey(s.ids[a], s.ids[b])]
	if !ok {
		return
	}
	s.heap = append(s.heap, candidate{rank: m.rank, pos: a, left: s.ids[a], right: s.ids[b], id: m.id})
	h := s.heap
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (s *bpeScratch) pop() candidate {
	h := s.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && h[r].less(h[l]) {
			m = r
		}
		if !h[m].less(h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	s.heap = h
	return top
}
