package provider

import (
	"strings"
	"unicode/utf8"
)

// MaxMessage bounds a provider-supplied error message.
const MaxMessage = 512

// Message makes a provider-supplied text fit to show a client or a log: trimmed,
// valid UTF-8 (invalid bytes become U+FFFD) and at most MaxMessage bytes,
// cut on a rune boundary and marked with "…" when cut. Every classified
// error's Message goes through it.
func Message(s string) string {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\ufffd")
	}
	if len(s) <= MaxMessage {
		return s
	}
	cut := MaxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
