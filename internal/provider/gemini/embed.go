package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// embedRequest is the OpenAI embeddings request as far as Gemini can serve
// it.
type embedRequest struct {
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int64          `json:"dimensions"`
}

type genEmbedBatch struct {
	Requests []genEmbedRequest `json:"requests"`
}

type genEmbedRequest struct {
	Model                string     `json:"model"`
	Content              genContent `json:"content"`
	OutputDimensionality *int64     `json:"outputDimensionality,omitempty"`
}

// translateEmbed turns an OpenAI embeddings body into a Gemini
// batchEmbedContents body; it also returns the input count and whether the
// client asked for base64 vectors.
func translateEmbed(body []byte, model string) ([]byte, int, bool, error) {
	var in embedRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, 0, false, badRequest(err, "decoding embeddings request: %v", err)
	}
	var texts []string
	raw := bytes.TrimSpace(in.Input)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil, 0, false, badRequest(nil, "input is required")
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, 0, false, badRequest(err, "input: %v", err)
		}
		texts = []string{s}
	case raw[0] == '[':
		if err := json.Unmarshal(raw, &texts); err != nil {
			// Token arrays ([]int, [][]int) are OpenAI tokenizer ids;
			// Gemini has its own tokenizer and takes text only.
			return nil, 0, false, badRequest(err, "input must be a string or an array of strings (token arrays are not supported)")
		}
	default:
		return nil, 0, false, badRequest(nil, "input must be a string or an array of strings (token arrays are not supported)")
	}
	if len(texts) == 0 {
		return nil, 0, false, badRequest(nil, "input must not be empty")
	}
	base64Out := false
	switch in.EncodingFormat {
	case "", "float":
	case "base64":
		base64Out = true
	default:
		return nil, 0, false, badRequest(nil, "encoding_format %q is not supported", in.EncodingFormat)
	}
	out := genEmbedBatch{Requests: make([]genEmbedRequest, len(texts))}
	m := modelPath(model)
	for i, t := range texts {
		out.Requests[i] = genEmbedRequest{
			Model:                m,
			Content:              genContent{Parts: []genPart{{Text: t}}},
			OutputDimensionality: in.Dimensions,
		}
	}
	b, err := json.Marshal(&out)
	if err != nil {
		return nil, 0, false, badRequest(err, "encoding gemini request: %v", err)
	}
	return b, len(texts), base64Out, nil
}

func (a *Adapter) embed(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	model := strings.TrimPrefix(req.Model, "models/")
	body, n, b64, err := translateEmbed(req.Body, model)
	if err != nil {
		return nil, err
	}
	const what = "calling gemini batchEmbedContents"
	resp, err := a.send(ctx, http.MethodPost, a.prefix+modelPath(model)+":batchEmbedContents", body, what)
	if err != nil {
		return nil, err
	}
	data, err := provider.ReadBody(ctx, what, resp, a.maxResponse)
	if err != nil {
		return nil, err
	}
	out, err := translateEmbeddings(data, model, n, b64)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &provider.Response{Body: out, RateLimit: outcome.UnknownRateLimit}, nil
}

// translateEmbeddings turns {"embeddings":[{"values":[…]}]} into the
// OpenAI list. Gemini reports no token counts here, so usage is zero.
func translateEmbeddings(data []byte, model string, n int, b64 bool) ([]byte, error) {
	if !jsoncheck.Valid(data) {
		return nil, malformed("batchEmbedContents answer")
	}
	embs := gjson.GetBytes(data, "embeddings").Array()
	if len(embs) != n {
		return nil, malformed(fmt.Sprintf("batchEmbedContents answer: %d embeddings for %d inputs", len(embs), n))
	}
	list := openaiwire.EmbeddingList{Object: openaiwire.ObjectList, Data: make([]openaiwire.Embedding, len(embs)), Model: model}
	for i, e := range embs {
		values := e.Get("values")
		if !values.IsArray() {
			return nil, malformed("batchEmbedContents answer: embedding without values")
		}
		vec := make([]float64, 0, len(values.Raw)/8)
		ok := true
		values.ForEach(func(_, v gjson.Result) bool {
			ok = v.Type == gjson.Number
			vec = append(vec, v.Float())
			return ok
		})
		if !ok {
			return nil, malformed("batchEmbedContents answer: embedding value is not a number")
		}
		list.Data[i] = openaiwire.Embedding{Object: openaiwire.ObjectEmbedding, Index: i, Embedding: openaiwire.Vector{Values: vec, Base64: b64}}
	}
	out, err := openaiwire.Append(make([]byte, 0, len(data)+128), &list)
	if err != nil {
		// A number beyond float64's range (1e999) does not encode.
		return nil, malformed("batchEmbedContents answer: " + err.Error())
	}
	return out, nil
}
