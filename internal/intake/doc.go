// Package intake reads a client request within the limits: its body,
// buffered as its bytes arrive and charged to one memory budget
// (docs/ARCHITECTURE.md, "Memory"), and the few top-level fields the
// router needs, in one walk that also makes the bounded check, without
// decoding the rest (docs/ARCHITECTURE.md, "Hostile clients").
//
// A refusal is an *apierror.Error carrying the status and the OpenAI error fields;
// the caller writes it. An Error with EndConn set left the body unread:
// its answer must end the connection (EndConnection).
package intake
