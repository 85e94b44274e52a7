package tokenizer

// GPT-2's byte-level alphabet gives every byte a printable rune so that BPE
// tokens are ordinary strings: printable Latin-1 bytes stand for themselves
// and the remaining 68 bytes are shifted to U+0100 onwards, in byte order.
// byteRune and runeByte are fixed tables, never written after init.
var byteRune, runeByte = byteLevelTables()

func byteLevelTables() (enc [256]rune, dec map[rune]byte) {
	printable := func(b int) bool {
		return ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF)
	}
	dec = make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !printable(b) {
			r = rune(256 + n)
			n++
		}
		enc[b] = r
		dec[r] = byte(b)
	}
	return enc, dec
}

// byteLevelDecode turns a vocabulary string back into the bytes it stands
// for. ok is false when the string holds a rune outside the alphabet.
func byteLevelDecode(s string) (b []byte, ok bool) {
	b = make([]byte, 0, len(s))
	for _, r := range s {
		c, found := runeByte[r]
		if !found {
			return nil, false
		}
		b = append(b, c)
	}
	return b, true
}
