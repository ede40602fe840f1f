package provider

// MaxChoices bounds the choice indexes a Finishes tracks (OpenAI allows n
// up to 128, Gemini candidateCount up to 8).
const MaxChoices = 1 << 10

// Finishes is what a stream's reader knows of its choices' ends: the
// choice indexes it has seen and which of them have finished. It holds the
// rule of docs/ARCHITECTURE.md ("Streaming"): a body that ends cleanly
// (io.EOF between events, not a reset or a read error) is a whole answer
// when Whole reports true, at least one choice seen and every one seen
// finished, even without the API's closing event ([DONE], message_stop);
// otherwise it is a cut. The zero value has seen nothing. An index below 0
// or at MaxChoices or above counts as a choice that never finishes: a
// clean end after it is a cut, and it costs no memory. Choices 0 to 63
// cost no allocation.
type Finishes struct {
	seen, done uint64  // choices 0 to 63, a bit each; done implies seen
	more       []uint8 // choices 64 on, by index-64: 0 unseen, seen, or finished
	open       int     // choices in more seen and not finished
	bad        bool    // an index out of range was seen
}

const (
	choiceSeen     uint8 = 1
	choiceFinished uint8 = 2
)

// Saw records that choice i is part of the answer.
func (f *Finishes) Saw(i int) {
	if uint(i) < 64 {
		f.seen |= 1 << uint(i)
		return
	}
	f.mark(i, choiceSeen)
}

// Finish records that choice i has its finish reason.
func (f *Finishes) Finish(i int) {
	if uint(i) < 64 {
		f.seen |= 1 << uint(i)
		f.done |= 1 << uint(i)
		return
	}
	f.mark(i, choiceFinished)
}

// mark records choice i, at 64 or above, as seen or finished.
func (f *Finishes) mark(i int, to uint8) {
	if i < 64 || i >= MaxChoices {
		f.bad = true
		return
	}
	i -= 64
	if i >= len(f.more) {
		f.more = append(f.more, make([]uint8, i+1-len(f.more))...)
	}
	switch was := f.more[i]; {
	case was >= to:
		return
	case was == 0 && to == choiceSeen:
		f.open++
	case was == choiceSeen && to == choiceFinished:
		f.open--
	}
	f.more[i] = to
}

// Whole reports whether a clean end of the body now would end a whole
// answer: a choice was seen, and every choice seen has finished.
func (f *Finishes) Whole() bool {
	return !f.bad && f.open == 0 && f.seen&^f.done == 0 && (f.seen != 0 || len(f.more) > 0)
}
