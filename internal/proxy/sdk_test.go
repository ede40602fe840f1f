package proxy

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/simulated"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// TestOpenAISDK drives the router with the official Go OpenAI SDK as the
// client: chat (plain and streamed with usage), legacy completions,
// embeddings, the model list, and an error the SDK must parse.
func TestOpenAISDK(t *testing.T) {
	sim, err := simulated.New(provider.Config{Name: "sim"}, simulated.Config{Reply: "Hello from the router"})
	if err != nil {
		t.Fatal(err)
	}
	table, _ := route.NewTable([]route.ModelConfig{{Name: "gpt-4o-mini", Targets: []route.Target{{Provider: "sim", Model: "sim-1"}}}})
	s, err := Open(routing.Options{
		Providers:  []provider.Descriptor{{Name: "sim", Type: "simulated", Adapter: sim}},
		Models:     table,
		Limits:     limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 10e9},
		ClientKeys: []string{"client-key"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("client-key"), option.WithMaxRetries(0))
	ctx := context.Background()

	chat, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if got := chat.Choices[0].Message.Content; got != "Hello from the router" {
		t.Errorf("chat content = %q", got)
	}
	if chat.Usage.CompletionTokens == 0 {
		t.Error("chat usage missing")
	}

	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         "gpt-4o-mini",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if got := acc.Choices[0].Message.Content; got != "Hello from the router" {
		t.Errorf("streamed content = %q", got)
	}
	if acc.Usage.CompletionTokens == 0 {
		t.Error("stream usage missing")
	}

	comp, err := client.Completions.New(ctx, openai.CompletionNewParams{
		Model:  "gpt-4o-mini",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("say hi")},
	})
	if err != nil || !strings.Contains(comp.Choices[0].Text, "Hello") {
		t.Errorf("completions: %v %+v", err, comp)
	}

	emb, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model: "gpt-4o-mini",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}},
	})
	if err != nil || len(emb.Data) != 2 || len(emb.Data[1].Embedding) == 0 {
		t.Errorf("embeddings: %v %+v", err, emb)
	}

	models, err := client.Models.List(ctx)
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != "gpt-4o-mini" {
		t.Errorf("models: %v %+v", err, models)
	}

	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "no-such-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Errorf("unknown model: got %v", err)
	}

	bad := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("wrong"), option.WithMaxRetries(0))
	_, err = bad.Models.List(ctx)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Errorf("wrong key: got %v", err)
	}
}
