package listen

import "slices"

// agreement is LocalAgreement-2 (Macháček et al., whisper_streaming, as
// speaches runs it) over Whisper token sequences: a hypothesis of a
// growing utterance commits the words on which it and the hypothesis
// before it agree, and committed words never change, since every later
// hypothesis is decoded as their continuation. It cuts only where both
// hypotheses end a word (a new word, punctuation or a timestamp follows),
// so a word still being spoken ("Ameri" → "Americans") is never
// committed half-heard, and after a sentence's end ("do.") only where
// both go on with text: a hypothesis often ends a sentence only because
// its audio ends, and Whisper ends the utterance after a committed one:
// at a 0.25-s cadence tiny committed "Ask for you." on jfk and lost
// "what you can do for your country" (base lost "for your country" so
// before).
type agreement struct {
	committed []int32
	prev      []int32
	// older is the hypothesis before prev; with three, a hypothesis
	// commits only what it, prev and older agree on (LocalAgreement-3).
	older []int32
	three bool
	// boundary reports whether the word before a token is complete: the
	// token is a timestamp, text beginning with a space, or punctuation
	// that ends a word (", 10" and "forward, 10" agree on "forward").
	boundary func(int32) bool
	// ends reports whether a token ends a sentence ('.', '?', '!'), text
	// whether it is text (not a timestamp): the committed text ends with
	// a sentence only where both hypotheses go on with text after it.
	ends, text func(int32) bool
	// fold, if set, maps a token to the token of its lower-case text (or
	// itself): readings that differ only in a word's case agree on it.
	fold func(int32) int32
}

// update takes the next hypothesis, which begins with the committed
// tokens, and returns how many tokens are committed after it.
func (a *agreement) update(hyp []int32) int {
	prev, older := a.prev, a.older
	a.older, a.prev = prev, append(a.prev[:0:0], hyp...)
	if len(hyp) < len(a.committed) || !slices.Equal(hyp[:len(a.committed)], a.committed) {
		return len(a.committed) // not a continuation: nothing to agree on
	}
	n := len(a.committed)
	for n < len(hyp) && n < len(prev) && a.same(hyp[n], prev[n]) && (!a.three || n < len(older) && a.same(older[n], hyp[n])) {
		n++
	}
	// The agreed tokens end where the next token of both hypotheses ends
	// the word before it; a hypothesis's last word may still grow, so the
	// cut needs a token after it in both.
	for j := n; j > len(a.committed); j-- {
		if a.ends != nil && a.ends(hyp[j-1]) && !(j < len(hyp) && j < len(prev) && a.text(hyp[j]) && a.text(prev[j])) {
			continue
		}
		if j < len(hyp) && j < len(prev) && a.boundary(hyp[j]) && a.boundary(prev[j]) && (!a.three || j < len(older) && a.boundary(older[j])) {
			for k := len(a.committed); k < j; k++ {
				a.committed = append(a.committed, a.pick(hyp, prev, k))
			}
			break
		}
	}
	return len(a.committed)
}

// pick returns the token committed at k, where the readings agree: the
// latest reading's, but where they wrote the word in different cases, the
// lower-case one within a sentence and the capitalised one after a
// sentence's end. Whisper then goes on in the style of what is committed:
// with the latest reading's "Spades, Four of" committed, cards_005's Final
// went on "Clothes, Seven of Hearts" where offline reads "four of clubs,
// seven of hearts".
func (a *agreement) pick(hyp, prev []int32, k int) int32 {
	x, y := hyp[k], prev[k]
	if x == y || a.fold == nil || !a.text(x) || !a.text(y) {
		return x
	}
	lower, upper := a.fold(x), x
	if upper == lower {
		upper = y
	}
	j := k - 1
	for j >= 0 && !a.text(hyp[j]) {
		j--
	}
	switch {
	case j < 0:
		return x // the group's first word: no sentence to go by
	case a.ends != nil && a.ends(hyp[j]):
		return upper
	}
	return lower
}

// same reports whether two readings agree on a token: the same token,
// two timestamps, or the same word in another case. Where Whisper puts a
// segment's bounds moves by a step or a few between readings of growing
// audio while their text agrees: tiny read jfk's "Ask what you can do for
// your country" from <|0.00|>, <|0.50|>, <|0.30|> and <|0.30|> in four
// readings, and no three agreed on a word before the Final. And it
// capitalises a word or not from one reading to the next: cards_005's
// readings went "Eight of Spades for…", "Eight of spades, four of clubs.",
// "Spades, Four of Clothes, …", so "spades" and "four" waited for the
// Final. The hypothesis's own timestamps are committed, and for case see
// pick.
func (a *agreement) same(x, y int32) bool {
	if x == y || a.text != nil && !a.text(x) && !a.text(y) {
		return true
	}
	return a.fold != nil && a.fold(x) == a.fold(y)
}
