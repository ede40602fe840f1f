package provider

import (
	"encoding/json"
	"testing"
)

func TestMinimal(t *testing.T) {
	for _, op := range []Op{OpChat, OpCompletions, OpEmbeddings, OpResponses, OpMessages} {
		r := Minimal(op, `claude-"x"`)
		var doc map[string]any
		if err := json.Unmarshal(r.Body, &doc); err != nil {
			t.Fatalf("%v: body %s is not JSON: %v", op, r.Body, err)
		}
		if doc["model"] != `claude-"x"` || string(r.Body[r.ModelStart:r.ModelEnd]) != `"claude-\"x\""` || r.Op != op || r.Stream {
			t.Errorf("%v: body %s, model at [%d:%d], want the model there and no stream", op, r.Body, r.ModelStart, r.ModelEnd)
		}
		if limit, ok := doc["max_tokens"]; op != OpEmbeddings && op != OpResponses && limit != 1.0 || ok && op == OpEmbeddings {
			t.Errorf("%v: max_tokens %v, want 1 (none for embeddings)", op, limit)
		}
		r.Model = "m2"
		if got := string(r.AppendBody(nil)); !json.Valid([]byte(got)) {
			t.Errorf("%v: AppendBody with another model gave %s", op, got)
		}
	}
}
