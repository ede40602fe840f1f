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
// clean end after it is a cut, and it costs no memory.
type Finishes struct {
	state []uint8 // by choice index: 0 unseen, seen, or finished
	open  int     // choices seen and not finished
	bad   bool    // an index out of range was seen
}

const (
	choiceSeen     uint8 = 1
	choiceFinished uint8 = 2
)

// Saw records that choice i is part of the answer.
func (f *Finishes) Saw(i int) { f.mark(i, choiceSeen) }

// Finish records that choice i has its finish reason.
func (f *Finishes) Finish(i int) { f.mark(i, choiceFinished) }

func (f *Finishes) mark(i int, to uint8) {
	if i < 0 || i >= MaxChoices {
		f.bad = true
		return
	}
	if i >= len(f.state) {
		f.state = append(f.state, make([]uint8, i+1-len(f.state))...)
	}
	switch was := f.state[i]; {
	case was >= to:
		return
	case was == 0 && to == choiceSeen:
		f.open++
	case was == choiceSeen && to == choiceFinished:
		f.open--
	}
	f.state[i] = to
}

// Whole reports whether a clean end of the body now would end a whole
// answer: a choice was seen, and every choice seen has finished.
func (f *Finishes) Whole() bool { return !f.bad && f.open == 0 && len(f.state) > 0 }
