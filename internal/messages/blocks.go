package messages

import (
	"github.com/llmrouter/llmrouter/internal/jsonscan"
)

// The checks of a request's messages and their content blocks, as
// Anthropic makes them (docs/ARCHITECTURE.md, "Anthropic Messages API"):
// decode walks the body once and hands each message here.

// checkMessages checks the messages that begin where p is, where they
// stand, counting their tokens into c, and returns the index past them.
func checkMessages(p *jsonscan.Walker, c *counter) (int, *Error) {
	if s, at := p.Text(), p.At(); at >= len(s) || s[at] != '[' {
		if jsonscan.End(s, at) < 0 {
			return -1, notJSON
		}
		return -1, invalid("messages", msgList)
	}
	n := 0
	w := p.Walk()
	for w.Member() {
		end, e := checkMessage(loc{base: "messages"}.at(n), &w, c)
		if e != nil {
			return -1, e
		}
		w.Resume(end)
		n++
	}
	switch {
	case w.At() < 0:
		return -1, notJSON
	case n == 0:
		return -1, invalid("messages", "at least one message is required")
	}
	return w.At(), nil
}

// checkMessage checks the message that begins where p is, its content's
// blocks where they stand, and returns the index past it. Its errors come
// in a fixed order whatever the order of its keys: the role's, then the
// content's.
func checkMessage(l loc, p *jsonscan.Walker, c *counter) (int, *Error) {
	s, at := p.Text(), p.At()
	if at >= len(s) || s[at] != '{' {
		if jsonscan.End(s, at) < 0 {
			return -1, notJSON
		}
		return -1, invalid(l.String(), msgDict)
	}
	// The first of a repeated key counts, as for gjson's Get.
	var (
		role, content string
		blocksErr     *Error
		blocks        bool // content is a list, checked where it stands
	)
	w := p.Walk()
	for w.Member() {
		switch k := w.Key(); {
		case k == "content" && content == "" && w.First() == '[':
			start := w.At()
			end, e := checkBlocks(l, w.Walk(), true, c)
			if e != nil {
				if e == notJSON {
					return -1, e
				}
				blocksErr, end = e, jsonscan.End(s, start)
			}
			content, blocks = s[start:max(end, start+1)], true
			w.Resume(end)
		case k == "content" && content == "":
			w.Skip()
			content = w.Val()
		case k == "role" && role == "":
			w.Skip()
			role = w.Val()
		default:
			w.Skip()
		}
	}
	if w.At() < 0 {
		return -1, notJSON
	}
	if e := requiredStr(l, "role", role); e != nil {
		return -1, e
	}
	switch jsonscan.Unquote(role) {
	case "user", "assistant":
	case "system":
		// Claude Code (2.1.33x) sends system turns inside messages (its
		// environment notes), and Anthropic's API takes them: accepted,
		// passed through natively, a system message in translation.
	default:
		return -1, invalid(l.field("role"), "Input should be 'user', 'assistant' or 'system'")
	}
	switch {
	case content == "":
		return -1, invalid(l.field("content"), msgRequired)
	case isString(content):
		c.text(content)
		return w.At(), nil
	case !blocks:
		return -1, invalid(l.field("content"), msgList)
	}
	return w.At(), blocksErr
}

// checkBlocks checks the list of content blocks w walks (a message's, or
// a tool_result's whose blocks nest is false), counting their tokens into
// c, and returns the index past it.
func checkBlocks(l loc, w jsonscan.Walker, nest bool, c *counter) (int, *Error) {
	j := 0
	for w.Member() {
		end, e := checkBlock(l.at(j), &w, nest, c)
		if e != nil {
			return -1, e
		}
		w.Resume(end)
		j++
	}
	if w.At() < 0 {
		return -1, notJSON
	}
	return w.At(), nil
}

// blockTags are the block types Anthropic's message says it expects; a
// type outside them is accepted all the same (a newer block).
const blockTags = "'text', 'image', 'document', 'search_result', 'thinking', 'redacted_thinking', 'tool_use', 'tool_result', 'server_tool_use', 'web_search_tool_result'"

// block holds the fields of a content block that some check reads, the
// first occurrence of each, as their JSON texts.
type block struct {
	typ, text, source, id, name, input, toolUseID, content, isError, thinking, signature, data string
}

// set records v as the field k when it is one of block's and not yet set.
func (b *block) set(k string, v string) {
	var f *string
	switch k {
	case "type":
		f = &b.typ
	case "text":
		f = &b.text
	case "source":
		f = &b.source
	case "id":
		f = &b.id
	case "name":
		f = &b.name
	case "input":
		f = &b.input
	case "tool_use_id":
		f = &b.toolUseID
	case "content":
		f = &b.content
	case "is_error":
		f = &b.isError
	case "thinking":
		f = &b.thinking
	case "signature":
		f = &b.signature
	case "data":
		f = &b.data
	default:
		return
	}
	if *f == "" {
		*f = v
	}
}

// checkBlock checks the content block that begins where p is: an object
// with a string type, and the required fields of the known types; nest
// is whether a tool_result's content blocks are checked in turn (false:
// this is one of them). It counts the block's tokens into c and returns
// the index past it.
func checkBlock(l loc, p *jsonscan.Walker, nest bool, c *counter) (int, *Error) {
	if s, at := p.Text(), p.At(); at >= len(s) || s[at] != '{' {
		if jsonscan.End(s, at) < 0 {
			return -1, notJSON
		}
		return -1, invalid(l.String(), msgDict)
	}
	var b block
	w := p.Walk()
	for w.Next() {
		b.set(w.Key(), w.Val())
	}
	end := w.At()
	if end < 0 {
		return -1, notJSON
	}
	switch {
	case b.typ == "":
		return -1, invalid(l.String(), msgNoTag)
	case !isString(b.typ):
		return -1, tagError(l.String(), b.typ, blockTags)
	}
	typ := jsonscan.Unquote(b.typ)
	if !nest {
		// A tool_result's block: an image, else its text.
		if typ == "image" {
			c.images++
		} else {
			c.text(b.text)
		}
	}
	switch typ {
	case "text":
		if e := requiredStr(l, "text", b.text); e != nil {
			return -1, e
		}
	case "image":
		if e := requiredDict(l, "source", b.source); e != nil {
			return -1, e
		}
		if e := checkImageSource(l, b.source); e != nil {
			return -1, e
		}
		if nest {
			c.images++
		}
		return end, nil
	case "document":
		if e := requiredDict(l, "source", b.source); e != nil {
			return -1, e
		}
		if nest {
			if f := jsonscan.Fields(b.source, "type", "data"); jsonscan.Unquote(f[0]) == "text" {
				c.text(f[1])
			}
		}
		return end, nil
	case "tool_use", "server_tool_use":
		if e := requiredStr(l, "id", b.id); e != nil {
			return -1, e
		}
		if e := requiredStr(l, "name", b.name); e != nil {
			return -1, e
		}
		if e := requiredDict(l, "input", b.input); e != nil {
			return -1, e
		}
		if nest {
			c.text(b.name)
			c.bytes += int64(len(b.input))
		}
		return end, nil
	case "tool_result":
		if e := requiredStr(l, "tool_use_id", b.toolUseID); e != nil {
			return -1, e
		}
		switch b.isError {
		case "", "true", "false", "null":
		default:
			return -1, invalid(l.field("is_error"), msgBool)
		}
		switch {
		case b.content == "", b.content == "null":
		case isString(b.content):
			if nest {
				c.text(b.content)
			}
		case !isArray(b.content):
			return -1, invalid(l.field("content"), msgList)
		case nest:
			// Text the walk has read (and checked) already.
			if _, e := checkBlocks(l, jsonscan.Walk(b.content, 0), false, c); e != nil {
				return -1, e
			}
		}
		return end, nil
	case "thinking":
		if e := requiredStr(l, "thinking", b.thinking); e != nil {
			return -1, e
		}
		if e := requiredStr(l, "signature", b.signature); e != nil {
			return -1, e
		}
		return end, nil
	case "redacted_thinking":
		if e := requiredStr(l, "data", b.data); e != nil {
			return -1, e
		}
		return end, nil
	}
	if nest {
		c.text(b.text)
	}
	return end, nil
}

// checkImageSource checks an image's source: base64 needs a media type
// Anthropic takes and the data, url the URL; other source types (file…)
// pass.
func checkImageSource(l loc, src string) *Error {
	f := jsonscan.Fields(src, "type", "media_type", "data", "url")
	typ := f[0]
	switch {
	case typ == "":
		return invalid(l.field("source"), msgNoTag)
	case !isString(typ):
		return tagError(l.field("source"), typ, "'base64', 'url', 'file'")
	}
	switch jsonscan.Unquote(typ) {
	case "base64":
		mt := f[1]
		switch {
		case mt == "":
			return invalid(l.field("source.media_type"), msgRequired)
		case !isString(mt):
			return invalid(l.field("source.media_type"), msgString)
		}
		switch jsonscan.Unquote(mt) {
		case "image/jpeg", "image/png", "image/gif", "image/webp":
		default:
			return invalid(l.field("source.media_type"), "Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'")
		}
		if d := f[2]; !isString(d) {
			if d == "" {
				return invalid(l.field("source.data"), msgRequired)
			}
			return invalid(l.field("source.data"), msgString)
		}
	case "url":
		if u := f[3]; !isString(u) {
			if u == "" {
				return invalid(l.field("source.url"), msgRequired)
			}
			return invalid(l.field("source.url"), msgString)
		}
	}
	return nil
}
