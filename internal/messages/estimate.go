package messages

import (
	"unsafe"

	"github.com/tidwall/gjson"
)

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
// body is a checked request (Decode or DecodeCount passed).
func EstimateInputTokens(body []byte) int64 {
	doc := gjson.Parse(unsafe.String(unsafe.SliceData(body), len(body)))
	var c counter
	doc.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "system":
			c.content(v)
		case "messages":
			v.ForEach(func(_, m gjson.Result) bool {
				c.content(m.Get("content"))
				return true
			})
		case "tools":
			v.ForEach(func(_, t gjson.Result) bool {
				c.bytes += int64(len(t.Raw))
				return true
			})
		}
		return true
	})
	return max(1, (c.bytes+bytesPerToken-1)/bytesPerToken+c.tokens)
}

// counter adds up the bytes of text and the tokens of images.
type counter struct {
	bytes, tokens int64
}

// text counts a JSON string without its quotes.
func (c *counter) text(v gjson.Result) {
	if v.Type == gjson.String {
		c.bytes += int64(max(len(v.Raw)-2, 0))
	}
}

// content counts a string or a list of blocks.
func (c *counter) content(v gjson.Result) {
	if v.Type == gjson.String {
		c.text(v)
		return
	}
	v.ForEach(func(_, b gjson.Result) bool {
		c.block(b)
		return true
	})
}

func (c *counter) block(b gjson.Result) {
	switch b.Get("type").Str {
	case "thinking", "redacted_thinking":
	case "image":
		c.tokens += imageTokens
	case "tool_use", "server_tool_use":
		c.text(b.Get("name"))
		c.bytes += int64(len(b.Get("input").Raw))
	case "tool_result":
		if r := b.Get("content"); r.Type == gjson.String {
			c.text(r)
		} else {
			r.ForEach(func(_, inner gjson.Result) bool {
				if inner.Get("type").Str == "image" {
					c.tokens += imageTokens
				} else {
					c.text(inner.Get("text"))
				}
				return true
			})
		}
	case "document":
		if src := b.Get("source"); src.Get("type").Str == "text" {
			c.text(src.Get("data"))
		}
	default:
		c.text(b.Get("text"))
	}
}
