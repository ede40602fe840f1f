// Package configs holds the configuration files shipped with llmrouter:
// the embedded default (simulated providers, so the router answers with no
// keys and no network) and, in examples/, files for real providers.
package configs
