package wire

import "github.com/llmrouter/llmrouter/internal/openaiwire"

// Event is one event of a Responses stream: its type is also the SSE
// event's name.
type Event interface{ EventType() string }

// The events, each with OpenAI's fields, all of them required.
type (
	ResponseEvent struct {
		Type           string    `json:"type"`
		SequenceNumber int       `json:"sequence_number"`
		Response       *Response `json:"response"`
	}
	OutputItemEvent struct {
		Type           string     `json:"type"`
		SequenceNumber int        `json:"sequence_number"`
		OutputIndex    int        `json:"output_index"`
		Item           OutputItem `json:"item"`
	}
	ContentPartEvent struct {
		Type           string        `json:"type"`
		SequenceNumber int           `json:"sequence_number"`
		ItemID         string        `json:"item_id"`
		OutputIndex    int           `json:"output_index"`
		ContentIndex   int           `json:"content_index"`
		Part           OutputContent `json:"part"`
	}
	TextDeltaEvent struct {
		Type           string     `json:"type"`
		SequenceNumber int        `json:"sequence_number"`
		ItemID         string     `json:"item_id"`
		OutputIndex    int        `json:"output_index"`
		ContentIndex   int        `json:"content_index"`
		Delta          string     `json:"delta"`
		Logprobs       []struct{} `json:"logprobs"`
	}
	TextDoneEvent struct {
		Type           string     `json:"type"`
		SequenceNumber int        `json:"sequence_number"`
		ItemID         string     `json:"item_id"`
		OutputIndex    int        `json:"output_index"`
		ContentIndex   int        `json:"content_index"`
		Text           string     `json:"text"`
		Logprobs       []struct{} `json:"logprobs"`
	}
	RefusalDeltaEvent struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		ContentIndex   int    `json:"content_index"`
		Delta          string `json:"delta"`
	}
	RefusalDoneEvent struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		ContentIndex   int    `json:"content_index"`
		Refusal        string `json:"refusal"`
	}
	ArgumentsDeltaEvent struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		Delta          string `json:"delta"`
	}
	ArgumentsDoneEvent struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		Name           string `json:"name"`
		Arguments      string `json:"arguments"`
	}
	// CustomInputDeltaEvent and CustomInputDoneEvent stream a custom
	// tool call's input text.
	CustomInputDeltaEvent struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		Delta          string `json:"delta"`
	}
	CustomInputDoneEvent struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		Input          string `json:"input"`
	}
	// ErrorEvent carries the error flat (the spec's shape) and nested
	// (OpenAI's real one, which makes openai-node, openai-python and
	// LangChain raise).
	ErrorEvent struct {
		Type           string           `json:"type"`
		SequenceNumber int              `json:"sequence_number"`
		Code           string           `json:"code"`
		Message        string           `json:"message"`
		Param          *string          `json:"param"`
		Error          openaiwire.Error `json:"error"`
	}
)

func (e *ResponseEvent) EventType() string         { return e.Type }
func (e *OutputItemEvent) EventType() string       { return e.Type }
func (e *ContentPartEvent) EventType() string      { return e.Type }
func (e *TextDeltaEvent) EventType() string        { return e.Type }
func (e *TextDoneEvent) EventType() string         { return e.Type }
func (e *RefusalDeltaEvent) EventType() string     { return e.Type }
func (e *RefusalDoneEvent) EventType() string      { return e.Type }
func (e *ArgumentsDeltaEvent) EventType() string   { return e.Type }
func (e *ArgumentsDoneEvent) EventType() string    { return e.Type }
func (e *ErrorEvent) EventType() string            { return e.Type }
func (e *CustomInputDeltaEvent) EventType() string { return e.Type }
func (e *CustomInputDoneEvent) EventType() string  { return e.Type }

// Emitter writes a Responses event stream: numbered events, each as one
// SSE event with its type as the event name and its JSON on one data line.
// The zero value starts at sequence number 0; it is for one goroutine.
type Emitter struct {
	enc openaiwire.Encoder
	// Seq is the next sequence number.
	Seq int
}

// Next takes the next sequence number.
func (e *Emitter) Next() int {
	e.Seq++
	return e.Seq - 1
}

// Emit appends ev to dst. An event that does not encode (it cannot: every
// raw value in one came from valid JSON) is left out.
func (e *Emitter) Emit(dst []byte, ev Event) []byte {
	mark := len(dst)
	dst = append(dst, "event: "...)
	dst = append(dst, ev.EventType()...)
	dst = append(dst, "\ndata: "...)
	out, err := e.enc.Append(dst, ev)
	if err != nil {
		return dst[:mark]
	}
	return append(out, '\n', '\n')
}
