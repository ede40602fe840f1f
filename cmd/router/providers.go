package main

import (
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/anthropic"
	"github.com/llmrouter/llmrouter/internal/provider/bedrock"
	"github.com/llmrouter/llmrouter/internal/provider/gemini"
	"github.com/llmrouter/llmrouter/internal/provider/openai"
	"github.com/llmrouter/llmrouter/internal/provider/simulated"
	"github.com/llmrouter/llmrouter/internal/provider/vertex"
)

// providerTypes are the provider types this binary serves, the values a
// provider entry's `type:` may take. It is the one list that names them:
// a new type is its adapter package, exporting a provider.Type, plus one
// line here.
var providerTypes = provider.Types{
	openai.Type,
	openai.AzureType,
	anthropic.Type,
	gemini.Type,
	bedrock.Type,
	vertex.Type,
	openai.CompatibleType,
	simulated.Type,
}
