// Package layout holds the import rules of the module (docs/ARCHITECTURE.md,
// "Packages"): imports point down, the schema sits under no setting's
// owner, the body reader stays small, and the import drawing stays low. Its
// tests read the module's packages with `go list`.
package layout
