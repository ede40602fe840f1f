package nodesdk

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestFakeOpenAI proves the fake OpenAI with the official Go SDK: a tool
// call plain and streamed (with the usage chunk), the text answer to a
// tool result, and a wrong key refused. (The fake Anthropic is proved
// by TestAnthropicClientsOnFake.)
func TestFakeOpenAI(t *testing.T) {
	f := newFakeOpenAI(t, "openai", openaiKey)
	client := openai.NewClient(option.WithBaseURL(f.srv.URL+"/v1/"), option.WithAPIKey(openaiKey), option.WithMaxRetries(0))
	ctx := context.Background()
	ask := openai.ChatCompletionNewParams{
		Model:    "gpt-upstream-1",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")},
		Tools:    []openai.ChatCompletionToolUnionParam{weatherTool},
	}

	t.Run("tool round trip", func(t *testing.T) {
		chat, err := client.Chat.Completions.New(ctx, ask)
		if err != nil {
			t.Fatal(err)
		}
		c := chat.Choices[0]
		if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Name != "get_weather" {
			t.Fatalf("choice %+v, want one call of get_weather", c)
		}
		checkWeather(t, c.Message.ToolCalls[0].Function.Arguments)
		next := ask
		next.Messages = append(slices.Clone(ask.Messages), c.Message.ToParam(),
			openai.ToolMessage(`{"temperature":21}`, c.Message.ToolCalls[0].ID))
		final, err := client.Chat.Completions.New(ctx, next)
		if err != nil {
			t.Fatal(err)
		}
		if f := final.Choices[0]; f.FinishReason != "stop" || !strings.Contains(f.Message.Content, `{"temperature":21}`) {
			t.Errorf("answer to the tool result: %+v", f)
		}
	})

	t.Run("streamed tool call with usage", func(t *testing.T) {
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
		if acc.Usage.CompletionTokens == 0 || acc.Choices[0].FinishReason != "tool_calls" {
			t.Errorf("usage %+v, finish %q", acc.Usage, acc.Choices[0].FinishReason)
		}
	})

	t.Run("streamed text", func(t *testing.T) {
		params := ask
		params.Tools = nil
		stream := client.Chat.Completions.NewStreaming(ctx, params)
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if got := acc.Choices[0].Message.Content; got != "Hello from openai." {
			t.Errorf("streamed %q, want %q", got, "Hello from openai.")
		}
	})

	t.Run("wrong key", func(t *testing.T) {
		c := openai.NewClient(option.WithBaseURL(f.srv.URL+"/v1/"), option.WithAPIKey("wrong"), option.WithMaxRetries(0))
		if _, err := c.Chat.Completions.New(ctx, ask); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("got %v, want a 401", err)
		}
	})
}
