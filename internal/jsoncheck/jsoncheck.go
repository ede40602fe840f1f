package jsoncheck

import "github.com/llmrouter/llmrouter/internal/jsonscan"

// MaxDepth is the deepest nesting Check accepts: objects and arrays
// inside each other, the outermost counting 1.
const MaxDepth = jsonscan.MaxDepth

// MaxTopLevelKeys bounds the members of the top-level object.
const MaxTopLevelKeys = jsonscan.MaxTopLevelKeys

// Problem is the class of an Error.
type Problem = jsonscan.Problem

// The problems (jsonscan's).
const (
	Syntax       = jsonscan.Syntax
	UTF8         = jsonscan.UTF8
	Depth        = jsonscan.Depth
	DuplicateKey = jsonscan.DuplicateKey
	TooManyKeys  = jsonscan.TooManyKeys
)

// Error says what is wrong and where.
type Error = jsonscan.Error

// Valid reports whether doc is one valid JSON value no deeper than
// MaxDepth. It does not compare keys.
func Valid(doc []byte) bool { return jsonscan.Valid(doc) }

// Check validates doc, which must be one JSON value (any type) with
// optional surrounding whitespace, and, when it is an object, that its
// keys are distinct. It returns nil or an *Error.
func Check(doc []byte) error { return jsonscan.Check(doc) }
