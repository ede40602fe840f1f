package provider

import "errors"

// Type is one provider type: the `type:` value of a provider entry, the
// entry's block of options only that type has, and how its adapter is
// built. Each adapter package exports its Type (a family may export
// several); the binary names the types it serves in one list, cmd/router's
// providerTypes, so a new provider type is its package plus one line there.
// Nothing registers itself, and no other package lists the types.
type Type struct {
	// Name is the value of a provider entry's `type:` key, and the key of
	// the type's block in that entry (`azure:` under a provider of type
	// azure). Unique within a Types list.
	Name string
	// NeedsKey means a provider of this type cannot work without an API
	// key: api_key_env or api_key_file must name a non-empty one. false
	// means the key is optional (a local server, a gateway that adds it).
	NeedsKey bool
	// NewBlock returns a pointer to a new zero value of the type's block
	// (the adapter's own Config). The entry's block is decoded into it,
	// strictly, and Build receives it, still zero when the entry has no
	// block. nil means the type has no block: a key named after the type
	// is then unknown.
	NewBlock func() any
	// Build returns the adapter of one provider entry: p its common fields,
	// key its API key ("" for none), block what NewBlock returned, decoded
	// (nil when NewBlock is nil). It checks everything the type cares about
	// (the block, base_url, the key) and reports every problem at once,
	// joined, each naming its key relative to the entry (`base_url: …`,
	// `azure.api_version: …`); the Adapter is ignored when the error is not
	// nil. It does no I/O and starts no goroutine: router validate builds
	// adapters only to discard them.
	Build func(p Config, key string, block any) (Adapter, error)
}

// standInKey is what Build gets when the real key cannot be read, so that
// one call still reports the entry's other problems.
const standInKey = "unresolved-key"

// NewAdapter resolves p's API key (ResolveKey with NeedsKey) and builds the
// adapter. block is the decoded block; nil means a zero one. When the key
// cannot be read Build still runs, with a stand-in key, and the adapter is
// discarded: the error joins the key's problem with every one Build found,
// each naming its key relative to the entry. key is the resolved API key.
func (t Type) NewAdapter(p Config, block any) (a Adapter, key string, err error) {
	if block == nil && t.NewBlock != nil {
		block = t.NewBlock()
	}
	key, keyErr := p.ResolveKey(t.NeedsKey)
	use := key
	if keyErr != nil {
		use = standInKey
	}
	a, err = t.Build(p, use, block)
	if err = errors.Join(keyErr, err); err != nil {
		return nil, "", err
	}
	return a, key, nil
}

// Types is the list of provider types a binary serves, in the order its
// errors list them. The zero value knows no type.
type Types []Type

// Lookup returns the type named name; ok is false when there is none.
func (ts Types) Lookup(name string) (t Type, ok bool) {
	for _, t := range ts {
		if t.Name == name {
			return t, true
		}
	}
	return Type{}, false
}

// Names returns the types' names in list order.
func (ts Types) Names() []string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return names
}
