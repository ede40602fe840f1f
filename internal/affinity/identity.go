package affinity

import (
	"cmp"
	"net/http"
	"strings"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/llmrouter/llmrouter/internal/jsonscan"
)

// Key is a conversation's identity, hashed; 0 means none.
type Key uint64

// ID is a request's conversation identity, as its dialect read it
// (docs/ARCHITECTURE.md, "Affinity"). The zero ID means none: affinity
// leaves the request to ranking and records nothing.
type ID struct {
	Key Key
	// First: Key is the hash of the conversation's opening and the
	// request is that opening (nothing follows its first user turn): a new
	// conversation, recorded but not looked up.
	First bool
}

// The headers that name a session, in the order they count.
const (
	// SessionHeader is the router's own (X-LLMRouter-Session, in
	// canonical form).
	SessionHeader = "X-Llmrouter-Session"
	// ClaudeCodeHeader is the session id Claude Code sends.
	ClaudeCodeHeader = "X-Claude-Code-Session-Id"
	// CodexThreadHeader and CodexSessionHeader are what Codex CLI sends:
	// thread-id names the conversation (a sub-agent has its own),
	// session-id the session it belongs to (also sent as session_id,
	// whose canonical form keeps its underscore).
	CodexThreadHeader   = "Thread-Id"
	CodexSessionHeader  = "Session-Id"
	CodexSessionHeader2 = "Session_id"
	// OpencodeHeader is what opencode sends for the provider to keep its
	// session where its cache is (with x-session-id, the same value).
	OpencodeHeader = "X-Session-Affinity"
)

// Seeds keep named identities and openings apart.
const (
	seedNamed   = 0x9e3779b97f4a7c15
	seedOpening = 0xc2b2ae3d27d4eb4f
)

// Named is the identity a client named: a session header's value,
// prompt_cache_key, metadata.user_id. "" names none.
func Named(id string) ID {
	if id == "" {
		return ID{}
	}
	return ID{Key: nonZero(xxhash.Sum64String(id) ^ seedNamed)}
}

// NamedBytes is Named for a name held in b (a JSON string literal read
// from a body), without a copy.
func NamedBytes(b []byte) ID { return Named(view(b)) }

// FromHeaders is the identity h names: X-LLMRouter-Session, else
// x-claude-code-session-id, else Codex's thread-id, session-id or
// session_id, else opencode's x-session-affinity; none when none is set.
// It does not allocate.
func FromHeaders(h http.Header) ID {
	for _, name := range [...]string{SessionHeader, ClaudeCodeHeader, CodexThreadHeader, CodexSessionHeader, CodexSessionHeader2, OpencodeHeader} {
		if v := h[name]; len(v) > 0 && v[0] != "" {
			return Named(v[0])
		}
	}
	return ID{}
}

// Opening is the identity of the conversation whose system prompt (raw
// JSON: a string or a list of text blocks; nil: none) and messages (raw
// JSON: a list of {role, content}) are given: a hash of the system prompt,
// of any system, developer or assistant message before the first user
// turn, and of that turn; First when nothing follows it. Only the text is
// hashed (a string's JSON literal, a block's text, another block's type;
// a string is one text block), so cache_control marks that move from
// turn to turn do not change the identity. None when there is no user
// turn. messages and system must be valid JSON (jsoncheck); Opening reads
// no further than the start of the message after the first user turn and
// does not allocate.
func Opening(system, messages []byte) ID {
	var o Openings
	o.d.ResetWithSeed(seedOpening)
	if len(system) > 0 {
		// The value's text without the space around it, as any
		// decoder hands it over (trailing space included: FuzzOpening).
		s := view(system)
		writeContent(&o.d, strings.TrimRight(s[jsonscan.Space(s, 0):], " \t\r\n"))
	}
	ms := view(messages)
	w := jsonscan.Walk(ms, jsonscan.Space(ms, 0))
	for !w.Object() && w.Member() { // a list's elements
		if o.found {
			o.continues = true
			break
		}
		// The message's first role and content, read where it stands.
		var role, content string
		m := jsonscan.Walk(ms, w.At())
		for m.Next() {
			switch m.Key() {
			case "role":
				role = cmp.Or(role, m.Val())
			case "content":
				content = cmp.Or(content, m.Val())
			}
		}
		w.Resume(m.At())
		o.turn(role, content)
	}
	return o.ID()
}

// writeContent hashes a message's content (JSON text): a string, or a
// list of blocks (each block's text, or its type when it has none).
func writeContent(d *xxhash.Digest, c string) {
	if len(c) == 0 || c[0] != '[' {
		// As one text block: a string and [{"type":"text","text":s}] are
		// the same content.
		_, _ = d.WriteString("\x00")
		_, _ = d.WriteString(c)
		return
	}
	for w := jsonscan.Walk(c, 0); w.Next(); {
		f := jsonscan.Fields(w.Val(), "text", "type")
		_, _ = d.WriteString("\x00")
		if f[0] != "" {
			_, _ = d.WriteString(f[0])
		} else {
			_, _ = d.WriteString(f[1])
		}
	}
}

// view is b as a string without a copy; the caller keeps b unchanged
// while the string is in use (no string derived from it is kept).
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func nonZero(h uint64) Key {
	if h == 0 {
		return 1
	}
	return Key(h)
}

// Openings hashes a decoded conversation's opening as Opening does a raw
// one (the Responses API's, rebuilt from its previous_response_id chain):
// Begin with the system prompt, then Add each message in order until it
// returns false; ID is the identity. The zero Openings is not ready: call
// Begin first.
type Openings struct {
	d                xxhash.Digest
	found, continues bool
}

// Begin starts a conversation whose system prompt is system ("": none).
func (o *Openings) Begin(system string) {
	o.d.ResetWithSeed(seedOpening)
	o.found, o.continues = false, false
	if system != "" {
		_, _ = o.d.WriteString("\x00")
		_, _ = o.d.WriteString(system)
	}
}

// Add hashes the next message: its role (or, for an item that is not a
// message, its type) and the text of its parts, given by texts (each
// part's text, or its type when it has none). It returns false once the
// opening is complete: the message after the first user turn was seen.
func (o *Openings) Add(role string, texts func(yield func(string))) bool {
	if o.found {
		o.continues = true
		return false
	}
	_, _ = o.d.WriteString("\x00")
	_, _ = o.d.WriteString(role)
	texts(func(s string) {
		_, _ = o.d.WriteString("\x00")
		_, _ = o.d.WriteString(s)
	})
	o.found = role == "user"
	return true
}

// turn is Add of a message as Opening reads one from a raw
// conversation: role and content are the JSON texts of its first role
// and content ("" when absent).
func (o *Openings) turn(role, content string) bool {
	if o.found {
		o.continues = true
		return false
	}
	_, _ = o.d.WriteString("\x00")
	_, _ = o.d.WriteString(role)
	writeContent(&o.d, content)
	o.found = role == `"user"`
	return true
}

// ID is the identity of the conversation added: none without a user turn;
// First when nothing followed the first user turn.
func (o *Openings) ID() ID {
	if !o.found {
		return ID{}
	}
	return ID{Key: nonZero(o.d.Sum64()), First: !o.continues}
}

// Turns keeps a raw conversation's opening as a walk that reads the
// request hands its messages over (Turn: intake.ParseTurns), for its
// identity to be hashed only once it is known to be used (ID), without
// reading the messages again. It keeps four messages; an opening of more
// is read again. The texts it keeps alias the body walked. The zero
// Turns is ready.
type Turns struct {
	turns                  [4]struct{ role, content string }
	n                      int
	found, continues, over bool
}

// Turn takes the next message: the JSON texts of its first role and
// content ("" when absent). It returns false once the opening is
// complete (the message after the first user turn was seen) or Turns
// is full.
func (t *Turns) Turn(role, content string) bool {
	switch {
	case t.found:
		t.continues = true
		return false
	case t.n == len(t.turns):
		t.over = true
		return false
	}
	t.turns[t.n].role, t.turns[t.n].content = role, content
	t.n++
	t.found = role == `"user"`
	return true
}

// ID is Opening(nil, messages) of the conversation whose messages the
// walk handed over: hashed from the turns kept, or read again from
// messages when they were more than Turns keeps.
func (t *Turns) ID(messages []byte) ID {
	if t.over {
		return Opening(nil, messages)
	}
	var o Openings
	o.Begin("")
	for _, m := range t.turns[:t.n] {
		o.turn(m.role, m.content)
	}
	o.continues = t.continues
	return o.ID()
}
