// Package config loads llmrouter's one YAML file: the schema is composed
// from the packages' own Config types, the embedded default sits under
// every key, LLMROUTER_-prefixed environment variables override keys
// ("." becomes "_"), decoding is strict (an unknown key is an error), and
// every validation error names the key and the bad value.
//
// Load order: embedded default (without its providers and models when a
// file is given, since lists replace rather than merge) → the file → the
// environment. Provider keys never live in the YAML: api_key_env or
// api_key_file name where they are, and ResolveKey reads them.
package config
