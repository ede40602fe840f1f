// Package affinity keeps a conversation on the target that served it last
// (docs/ARCHITECTURE.md, "Affinity"): providers cache the prompts they
// served and bill a cached prefix at a fraction of the input price, so a
// conversation that changes provider pays for its whole history again.
//
// Model:
//
//	dialect ──ID──► attempt loop (internal/failover), plan step:
//	                  Table.Get(key) → the target that served it last;
//	                  first in its tier if healthy and in the best tier
//	                  with an available target; else ranking decides
//	                served ──► Table.Put(key, target); affinity_total{outcome}
//
// A request's identity (ID) is a 64-bit hash (xxhash, stable across
// processes) of, in this order: the X-LLMRouter-Session header, the
// x-claude-code-session-id header, the body's prompt_cache_key (chat) or
// metadata.user_id (Messages), else the conversation's opening: its
// system prompt and first user turn. An opening identifies a conversation
// only once it continues: a request that is its own opening (nothing
// after the first user turn) is a new conversation, recorded but not
// looked up, so that unrelated requests with the same opening still
// spread by score.
//
// The Table is a least-recently-served list of at most its capacity
// entries in one slice (no allocation per entry once it has grown) behind
// one mutex; an entry older than the TTL (routing.affinity.ttl, an
// argument of every call, so a reload takes effect at once) reads as
// absent. Time is injected: every method takes now. With shared_state the
// table reads and records through a Shared view first (internal/fleet's
// Affinity: one GET on a follow-up turn, the record queued); the table's
// own entries answer whenever that view cannot.
package affinity
