// Package clientauth is client authentication (docs/ARCHITECTURE.md,
// "HTTP surface"): the keys a router accepts from its clients (the `auth:`
// block names the variable that holds them) and the check of a request's
// Authorization: Bearer or x-api-key header against them, in constant time. With no
// keys, authentication is off and every request is allowed. Client keys
// are never forwarded: each provider gets its own.
package clientauth
