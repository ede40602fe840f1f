// Package jsoncheck is the bounded check of an untrusted JSON document
// under the name its callers (the provider adapters' answer checks) know
// it by: internal/jsonscan's Check and Valid, where it lives beside the
// scanner it shares (docs/ARCHITECTURE.md, "Hostile clients"). New code
// imports internal/jsonscan.
package jsoncheck
