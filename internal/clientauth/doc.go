// Package clientauth is client authentication (docs/ARCHITECTURE.md,
// "HTTP surface" and "Client keys and spend"): the `auth:` block, the keys
// a router accepts from its clients (anonymous ones from the variable
// auth.api_keys_env names, and named ones, auth.keys, each with its
// secret in a variable or as its SHA-256), and the check of a request's
// Authorization: Bearer or x-api-key header (on the Gemini API's routes
// also x-goog-api-key or ?key=) against them, in constant time, which names the key it matched. With no keys, authentication is
// off and every request is allowed. Client keys are never forwarded: each
// provider gets its own. What a named key may do (models, RPM/TPM,
// budget) is internal/clientkeys'.
package clientauth
