// Package budget is one client key's spend cap (docs/ARCHITECTURE.md,
// "Client keys and spend"): the spend recorded in the current period
// (a UTC calendar day, week or month, or the key's whole life) against
// its budget.
package budget
