package messages

// bytesPerToken is the rule of thumb for English text ("1 token ≈ 4
// characters"), as the router's other estimates use.
const bytesPerToken = 4

// imageTokens is what an image counts: Anthropic's documented cost of an
// image at its largest unscaled size (about 1.15 megapixels, width ×
// height / 750). The image's size is not read.
const imageTokens = 1600

// EstimateInputTokens is the router's own estimate of a Messages
// request's input tokens (count_tokens for a target that cannot count):
// about one token per four bytes of the system prompt, the messages'
// text, tool_use inputs, tool_result contents and tool definitions, plus
// imageTokens an image; at least 1. Earlier turns' thinking is not
// counted (Anthropic drops it from the context). String lengths are taken
// as written in the JSON, escapes included, which errs slightly high.
// body is a checked request (Decode or DecodeCount passed), whose
// Form.InputTokens is this count, read in Decode's walk; a body
// DecodeCount refuses counts 1.
func EstimateInputTokens(body []byte) int64 {
	r, _ := DecodeCountForm(body)
	return max(1, r.InputTokens)
}

// counter adds up the bytes of text and the images of a request, as
// Decode walks it.
type counter struct {
	bytes, images int64
}

// text counts a JSON string (its text) without its quotes; any other
// value counts nothing.
func (c *counter) text(v string) {
	if isString(v) {
		c.bytes += int64(max(len(v)-2, 0))
	}
}

// tokens is the estimate: at least 1.
func (c *counter) tokens() int64 {
	return max(1, (c.bytes+bytesPerToken-1)/bytesPerToken+c.images*imageTokens)
}
