package simulated

import (
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

const (
	// defaultDimensions is an embedding's length when the request does not
	// ask for one: small, so that answers stay short.
	defaultDimensions = 8
	// maxDimensions is the most dimensions a request may ask for, the
	// length of OpenAI's largest embeddings (text-embedding-3-large).
	maxDimensions = 3072
)

// embeddingBody answers every input with a deterministic unit vector
// derived from the input alone: its values are drawn from a generator
// seeded by the input's hash, then scaled to length 1. Asking for fewer
// dimensions gives the same vector cut short and scaled again, as
// OpenAI's text-embedding-3 models do. With encoding_format "base64" the
// values are sent as base64 little-endian float32s; as numbers they are
// rounded to six decimals to keep the answer short.
//
// An input is a string, a list of strings, a list of token ids (one
// input) or a list of such lists. dimensions outside 1 to maxDimensions
// and an encoding_format other than float or base64 are 400 client
// errors, as OpenAI answers them.
func embeddingBody(req *provider.Request, u outcome.Usage) ([]byte, error) {
	body := gjson.ParseBytes(req.Body)
	dims := defaultDimensions
	if d := body.Get("dimensions"); d.Exists() && d.Type != gjson.Null {
		if d.Type != gjson.Number || d.Num != math.Trunc(d.Num) || d.Num < 1 || d.Num > maxDimensions {
			return nil, embeddingError("dimensions", "dimensions must be an integer from 1 to "+strconv.Itoa(maxDimensions)+", got "+d.Raw)
		}
		dims = int(d.Num)
	}
	var b64 bool
	switch f := body.Get("encoding_format"); {
	case !f.Exists() || f.Type == gjson.Null || f.Str == "float":
	case f.Str == "base64":
		b64 = true
	default:
		return nil, embeddingError("encoding_format", "encoding_format must be float or base64, got "+f.Raw)
	}
	in := body.Get("input")
	inputs := []string{in.Raw}
	if arr := in.Array(); in.IsArray() && (len(arr) == 0 || arr[0].Type != gjson.Number) {
		inputs = inputs[:0]
		for _, v := range arr {
			inputs = append(inputs, v.Raw)
		}
	}
	list := openaiwire.EmbeddingList{
		Object: openaiwire.ObjectList,
		Data:   make([]openaiwire.Embedding, len(inputs)),
		Model:  req.Model,
		Usage:  openaiwire.EmbeddingUsage{PromptTokens: u.PromptTokens, TotalTokens: u.PromptTokens},
	}
	for i, s := range inputs {
		list.Data[i] = openaiwire.Embedding{Object: openaiwire.ObjectEmbedding, Index: i,
			Embedding: openaiwire.Vector{Values: embed(s, dims, !b64), Base64: b64}}
	}
	return openaiwire.Append(nil, &list)
}

// embed is the unit vector of dims values for input; round rounds each
// value to six decimals after scaling.
func embed(input string, dims int, round bool) []float64 {
	h := fnv.New64a()
	_, _ = io.WriteString(h, input)
	seed := h.Sum64()
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	vec := make([]float64, dims)
	var sum float64
	for i := range vec {
		vec[i] = r.NormFloat64()
		sum += vec[i] * vec[i]
	}
	norm := math.Sqrt(sum)
	if norm == 0 {
		norm = 1
	}
	for i := range vec {
		vec[i] /= norm
		if round {
			vec[i] = math.RoundToEven(vec[i]*1e6) / 1e6
		}
	}
	return vec
}

func embeddingError(param, msg string) *outcome.Error {
	return &outcome.Error{
		Kind:    outcome.ClientError,
		Status:  http.StatusBadRequest,
		Type:    "invalid_request_error",
		Param:   param,
		Message: "simulated provider: " + msg,
	}
}
