package nodesdk

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// TestEmbeddedDefault runs the router binary on its embedded default, as
// a newcomer does with `go run ./cmd/router`, and asks it for what real
// clients use besides text (issue 14, item 5): tool calls, answers to
// tool results, structured outputs, embeddings with dimensions and
// base64, usage. The official Go SDK (openai-go) asks first; then, when
// test/node's npm packages are installed, the official Node SDK runs
// default.test.mjs (chat.completions.parse with a zod schema, a required
// function tool, the runTools loop, streamed helpers).
func TestEmbeddedDefault(t *testing.T) {
	url := startDefaultRouter(t)
	t.Run("go", func(t *testing.T) { testGoSDK(t, url) })
	t.Run("node", func(t *testing.T) {
		node := nodeOrSkip(t)
		// Stat the script so that go test's cache knows this test reads it.
		if _, err := os.Stat("default.test.mjs"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "--test", "default.test.mjs")
		cmd.Env = append(os.Environ(), "ROUTER_URL="+url)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("node --test default.test.mjs failed: %v\n%s", err, out)
		}
		t.Logf("%s", out)
	})
	// The README's promise: Claude Code against the embedded default, no
	// keys, no network (the simulated providers behind claude-*).
	// The same promise for Gemini CLI: the embedded default routes every
	// gemini-* name onto the simulated providers.
	t.Run("gemini_cli", func(t *testing.T) {
		node, cli := geminiOrSkip(t)
		out := runGemini(t, node, cli, t.TempDir(), strings.TrimSuffix(url, "/v1"), "unused", "say hi")
		if !strings.Contains(out, "Simulated answer") {
			t.Errorf("gemini -p answered %q, want the simulated provider's answer", out)
		}
	})
	// Its tool loop on the default: the simulated model calls the tool
	// the prompt names (read_file, with arguments made from its schema),
	// Gemini CLI runs it (the file does not exist: its error is the
	// tool's output) and sends the result back, which the model's answer
	// quotes: the loop went through the router both ways.
	t.Run("gemini_cli_tool_loop", func(t *testing.T) {
		node, cli := geminiOrSkip(t)
		out := runGemini(t, node, cli, t.TempDir(), strings.TrimSuffix(url, "/v1"), "unused", "Use read_file.")
		if !strings.Contains(out, "Simulated answer") || !strings.Contains(out, "The tool read_file returned") {
			t.Errorf("gemini -p answered %q, want the simulated provider's answer quoting read_file's output", out)
		}
	})
	t.Run("claude_code", func(t *testing.T) {
		bin := claudeOrSkip(t)
		r := claudePrint(t, bin, t.TempDir(), strings.TrimSuffix(url, "/v1"), "unused", "say hi")
		if !strings.Contains(r.Result, "Simulated answer") {
			t.Errorf("claude -p result %q, want the simulated provider's answer", r.Result)
		}
	})
}

// nodeOrSkip returns node's path, skipping t when node or the npm
// packages are missing, except in CI, where .ci/run installs them.
func nodeOrSkip(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	_, statErr := os.Stat(filepath.Join("node_modules", "openai"))
	if err == nil && statErr == nil {
		_, statErr = os.Stat(filepath.Join("node_modules", "zod"))
	}
	if err != nil || statErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node or node_modules missing in CI (.ci/run runs npm ci): %v %v", err, statErr)
		}
		t.Skip("run `npm ci` in test/node to drive the router with the Node SDK")
	}
	return node
}

// weather is the arguments of the get_weather tool.
type weather struct {
	City string `json:"city"`
	Unit string `json:"unit"`
	Days int    `json:"days"`
}

var weatherTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: openai.String("The forecast for a city"),
	Strict:      openai.Bool(true),
	Parameters: shared.FunctionParameters{
		"type": "object",
		"properties": map[string]any{
			"city": map[string]any{"type": "string", "minLength": 2},
			"unit": map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
			"days": map[string]any{"type": "integer", "minimum": 1, "maximum": 7},
		},
		"required":             []string{"city", "unit", "days"},
		"additionalProperties": false,
	},
})

// checkWeather fails t unless args are get_weather's arguments, with no
// other keys, within the schema's bounds.
func checkWeather(t *testing.T, args string) {
	t.Helper()
	var w weather
	d := json.NewDecoder(strings.NewReader(args))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil || len(w.City) < 2 || (w.Unit != "celsius" && w.Unit != "fahrenheit") || w.Days < 1 || w.Days > 7 {
		t.Errorf("arguments %s do not satisfy get_weather's schema (%v)", args, err)
	}
}

func testGoSDK(t *testing.T, url string) {
	client := openai.NewClient(option.WithBaseURL(url+"/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	ctx := context.Background()
	ask := openai.ChatCompletionNewParams{
		Model:      "gpt-4o-mini",
		Messages:   []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")},
		Tools:      []openai.ChatCompletionToolUnionParam{weatherTool},
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")},
	}

	t.Run("required tool", func(t *testing.T) {
		chat, err := client.Chat.Completions.New(ctx, ask)
		if err != nil {
			t.Fatal(err)
		}
		c := chat.Choices[0]
		if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Name != "get_weather" || c.Message.ToolCalls[0].ID == "" {
			t.Fatalf("choice %+v, want one call of get_weather, finish tool_calls", c)
		}
		checkWeather(t, c.Message.ToolCalls[0].Function.Arguments)
		if chat.Usage.CompletionTokens == 0 || chat.Usage.PromptTokens == 0 {
			t.Errorf("usage %+v", chat.Usage)
		}

		// The tool's result goes back; the model answers with text.
		next := ask
		next.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")}
		next.Messages = append(slices.Clone(ask.Messages), c.Message.ToParam(),
			openai.ToolMessage(`{"temperature":21}`, c.Message.ToolCalls[0].ID))
		final, err := client.Chat.Completions.New(ctx, next)
		if err != nil {
			t.Fatal(err)
		}
		if f := final.Choices[0]; f.FinishReason != "stop" || !strings.Contains(f.Message.Content, `get_weather returned: {"temperature":21}`) {
			t.Errorf("answer to the tool result: %+v", f)
		}
	})

	t.Run("streamed tool call", func(t *testing.T) {
		params := ask
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		stream := client.Chat.Completions.NewStreaming(ctx, params)
		var acc openai.ChatCompletionAccumulator
		var finished []openai.FinishedChatCompletionToolCall
		for stream.Next() {
			acc.AddChunk(stream.Current())
			if tc, ok := acc.JustFinishedToolCall(); ok {
				finished = append(finished, tc)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(finished) != 1 || finished[0].Name != "get_weather" || finished[0].ID == "" {
			t.Fatalf("finished tool calls %+v, want one of get_weather", finished)
		}
		checkWeather(t, finished[0].Arguments)
		if c := acc.Choices[0]; c.FinishReason != "tool_calls" || c.Message.ToolCalls[0].Function.Arguments != finished[0].Arguments {
			t.Errorf("accumulated choice %+v", c)
		}
		if acc.Usage.CompletionTokens == 0 {
			t.Errorf("stream usage %+v", acc.Usage)
		}
	})

	t.Run("structured output", func(t *testing.T) {
		type person struct {
			Name   string   `json:"name"`
			Age    int      `json:"age"`
			Email  string   `json:"email"`
			Tags   []string `json:"tags"`
			Status string   `json:"status"`
		}
		schema := map[string]any{
			"type": "object",
			"properties": map[string]any{
				"name":   map[string]any{"type": "string"},
				"age":    map[string]any{"type": "integer", "minimum": 18, "maximum": 120},
				"email":  map[string]any{"type": "string", "format": "email"},
				"tags":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 2},
				"status": map[string]any{"$ref": "#/$defs/status"},
			},
			"required":             []string{"name", "age", "email", "tags", "status"},
			"additionalProperties": false,
			"$defs":                map[string]any{"status": map[string]any{"type": "string", "enum": []string{"active", "retired"}}},
		}
		for _, streamed := range []bool{false, true} {
			params := openai.ChatCompletionNewParams{
				Model:    "gpt-4o-mini",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Invent a person")},
				ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
					JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "person", Strict: openai.Bool(true), Schema: schema},
				}},
			}
			var content string
			if streamed {
				stream := client.Chat.Completions.NewStreaming(ctx, params)
				var acc openai.ChatCompletionAccumulator
				for stream.Next() {
					acc.AddChunk(stream.Current())
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				content = acc.Choices[0].Message.Content
			} else {
				chat, err := client.Chat.Completions.New(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				content = chat.Choices[0].Message.Content
			}
			var p person
			d := json.NewDecoder(strings.NewReader(content))
			d.DisallowUnknownFields()
			if err := d.Decode(&p); err != nil || p.Name == "" || p.Age < 18 || p.Age > 120 || !strings.Contains(p.Email, "@") ||
				len(p.Tags) < 2 || (p.Status != "active" && p.Status != "retired") {
				t.Errorf("streamed %v: content %s does not satisfy the schema (%v)", streamed, content, err)
			}
		}
	})

	t.Run("json object", func(t *testing.T) {
		chat, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:          "gpt-4o-mini",
			Messages:       []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Answer in JSON")},
			ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}},
		})
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(chat.Choices[0].Message.Content), &obj); err != nil || len(obj) == 0 {
			t.Errorf("content %q is not a JSON object: %v", chat.Choices[0].Message.Content, err)
		}
	})

	t.Run("embeddings", func(t *testing.T) {
		input := openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"hello", "world"}}
		floats, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "text-embedding-3-small", Input: input, Dimensions: openai.Int(64)})
		if err != nil {
			t.Fatal(err)
		}
		if len(floats.Data) != 2 || floats.Usage.PromptTokens == 0 {
			t.Fatalf("embeddings %+v", floats)
		}
		for _, e := range floats.Data {
			if n := norm(e.Embedding); len(e.Embedding) != 64 || math.Abs(n-1) > 1e-4 {
				t.Errorf("embedding %d: %d values, norm %g; want 64, 1", e.Index, len(e.Embedding), n)
			}
		}
		// openai-go leaves a base64 vector to the caller: decode the raw field.
		b64, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "text-embedding-3-small", Input: input, Dimensions: openai.Int(64),
			EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64})
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range b64.Data {
			var s string
			if err := json.Unmarshal([]byte(e.JSON.Embedding.Raw()), &s); err != nil {
				t.Fatalf("embedding %d is not a base64 string: %s", i, e.JSON.Embedding.Raw())
			}
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil || len(raw) != 64*4 {
				t.Fatalf("embedding %d: %d bytes (%v), want 64 float32s", i, len(raw), err)
			}
			vec := make([]float64, 64)
			for j := range vec {
				vec[j] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:])))
				if math.Abs(vec[j]-floats.Data[i].Embedding[j]) > 1e-6 {
					t.Fatalf("embedding %d[%d]: base64 %g, float %g", i, j, vec[j], floats.Data[i].Embedding[j])
				}
			}
		}
	})
}

func norm(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}
