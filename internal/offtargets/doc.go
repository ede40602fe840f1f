// Package offtargets holds one provider's disabled targets: the models
// that provider answered "model not found" for, each with the provider's
// message. A disabled target is skipped by ranking until a reload changes
// the provider or an operator enables it (docs/ARCHITECTURE.md,
// "Classification"). The per-provider runtime (internal/upstream) owns one
// Set and decides when to disable, lift, export, restore or mirror it;
// this package only keeps the set, safe for concurrent use, with a
// lock-free answer for the common case of none.
package offtargets
