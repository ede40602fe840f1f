// Package turn is one Responses API request on its way through the
// router: its id, the conversation it continues (previous_response_id)
// and its own input (item_references resolved), read from the store of
// responses; the Response object it echoes; the storing of its answer;
// and the input_items listing of a stored one (docs/ARCHITECTURE.md,
// "Responses API").
//
// Invariants:
//   - A stored response holds its own turn's input (item_references
//     resolved, instructions not: they are not inherited) and output, and
//     its turn holds the turn it continued; a chain expands oldest first.
//   - Every stored item has an id: minted (msg_, fc_, fco_) when the
//     client gave none.
//   - A store that cannot answer is a 503, never a turn served without
//     the conversation it continues; an answer the store refused says
//     store: false.
//   - An id the store does not hold is OpenAI's 400, unless the request
//     goes to a native Responses API, which may hold it.
package turn
