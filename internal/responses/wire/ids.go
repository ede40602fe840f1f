package wire

import (
	"crypto/rand"
	"encoding/hex"
)

// NewID returns prefix and 48 random hex digits: ids are unguessable,
// since GET /v1/responses/{id} returns a conversation to whoever names
// it. Prefixes are OpenAI's (resp_, msg_, fc_): OpenAI checks them when
// a client sends an item the router minted on to OpenAI itself.
func NewID(prefix string) string {
	var b [24]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return prefix + hex.EncodeToString(b[:])
}

// callAlphabet is what OpenAI's call ids are made of.
const callAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// NewCallID returns "call_" and 24 random alphanumerics, for a tool call
// whose provider gave it no id.
func NewCallID() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	out := make([]byte, 0, 5+len(b))
	out = append(out, "call_"...)
	for _, c := range b {
		out = append(out, callAlphabet[int(c)%len(callAlphabet)])
	}
	return string(out)
}
