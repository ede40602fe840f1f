package turn

import (
	"net/url"
	"strconv"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/responses"
	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// InputItems is the answer to GET /v1/responses/{id}/input_items for the
// stored rec: the items the response was given, which for a chained
// response are the earlier turns' input and output and then its own
// input, as OpenAI lists them. The query takes OpenAI's parameters:
// order (asc or desc, default desc: newest first), limit (1 to 100,
// default 20) and after (an item id: the page starts after it);
// include[] is accepted and changes nothing (the router keeps nothing it
// names). A bad parameter is a 400 naming it.
func InputItems(rec *store.Record, q url.Values) ([]byte, *responses.Error) {
	limit := 20
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return nil, responses.BadRequest("limit", "limit must be an integer from 1 to 100, got %q", responses.Cut(s))
		}
		limit = n
	}
	order := q.Get("order")
	switch order {
	case "", "desc", "asc":
	default:
		return nil, responses.BadRequest("order", "order must be asc or desc, got %q", responses.Cut(order))
	}
	var items []wire.Item
	if t := rec.Turn; t != nil {
		items = t.Input
		if t.Prev != nil {
			items = append(t.Prev.Conversation(), t.Input...)
		}
	}
	next := func(i int) int { return len(items) - 1 - i } // desc: the i-th listed
	if order == "asc" {
		next = func(i int) int { return i }
	}
	start := 0
	if after := q.Get("after"); after != "" {
		start = -1
		for i := range items {
			if items[next(i)].ID == after {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return nil, responses.BadRequest("after", "Item with id '%s' is not an input item of response '%s'.", responses.Cut(after), responses.Cut(rec.ID))
		}
	}
	list := wire.ItemList{Object: "list", Data: make([]wire.ListedItem, 0, min(limit, len(items)-start))}
	for i := start; i < len(items) && len(list.Data) < limit; i++ {
		list.Data = append(list.Data, wire.ListedItem(items[next(i)]))
	}
	if n := len(list.Data); n > 0 {
		list.FirstID, list.LastID = &list.Data[0].ID, &list.Data[n-1].ID
		list.HasMore = start+n < len(items)
	}
	b, err := openaiwire.Append(nil, &list)
	if err != nil {
		return nil, responses.BadRequest("", "the input items could not be listed: %v", err) // cannot happen: stored items are valid
	}
	return append(b, '\n'), nil
}
