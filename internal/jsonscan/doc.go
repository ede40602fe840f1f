// Package jsonscan reads JSON text without decoding it: the bounded
// check of an untrusted document, where a value ends, an object's
// members and an array's elements in order, a string's value. It is the
// one scanner of the router's request and answer paths: the body check
// (Check, in internal/intake; Valid, the adapters' through
// internal/jsoncheck), affinity's conversation opening, and the Messages
// request's walks (internal/messages/chat).
//
// Model:
//
//	End(s, i)        just past the value that begins at s[i]
//	String(s, i)     just past the string whose quote is s[i]
//	Plain(s, i)      the first byte from i on a string cannot hold as it
//	                 is: a quote, a backslash, a control or non-ASCII byte
//	Check(doc)       syntax, UTF-8, depth <= MaxDepth, distinct top-level
//	                 keys: nil or an *Error
//	Walk(s, i)       the members of the object (elements of the array)
//	                 at s[i]: Member/Skip/Next, Key and Val
//	Unquote(v)       the string a string's text denotes (gjson's Str)
//	Doc.Start(s)     a checked walk: Walk that also makes Check's check as
//	                 it goes (its Skip and Walk check what they pass);
//	                 it ends well only on text Check accepts
//
// Invariants:
//   - One bounded pass: nothing recurses, so no input can overflow the
//     stack; nesting is counted, not followed. Strings are read eight
//     bytes a step (a quote or a backslash found by word arithmetic).
//   - Text is read as gjson reads it: keys compared unescaped, the first
//     of a repeated key for Fields, every element in order.
//   - Check stops at the first problem and allocates only when the
//     top-level object has more than a few dozen keys.
//   - On text that is not valid JSON a walk ends early (Val "", End -1)
//     or reads nonsense, but never reads out of bounds and never panics.
//     Validity is Check's to decide, before, or a checked walk's as it
//     goes.
package jsonscan
