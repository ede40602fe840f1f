// Package config loads llmrouter's one YAML file: the schema is composed
// from the packages' own Config types, the embedded default sits under
// every key, LLMROUTER_-prefixed environment variables override keys
// ("." becomes "_"), decoding is strict (an unknown key is an error), and
// every problem names its key and its bad value.
//
// Load order: embedded default (without its providers and models when a
// file is given, since lists replace rather than merge) → the file → the
// environment. Provider keys never live in the YAML: api_key_env or
// api_key_file name where they are, and provider.Config.ResolveKey reads
// them.
//
// The package knows no provider type. A provider entry's common fields
// are decoded with the rest; its other keys wait in Provider.Blocks until
// ResolveTypes is given the binary's provider.Types, which say what each
// type's block is. So what a file may hold is settled in two steps, Load
// (or Check) then ResolveTypes, and the binary runs both (cmd/router
// loads, internal/daemon's Build resolves), serve and validate alike.
//
// Problems are reported all at once, never just the first: Check and
// ResolveTypes return errors.Join of one error per problem, each a single
// line "key: what is wrong, got value" (or "unknown key key"). A key that
// fails to decode is reported once; Validate is not asked about its zero
// value.
package config
