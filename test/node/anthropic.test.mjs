// Anthropic-dialect clients against the router's /v1/messages front door
// (run by anthropic_test.go): the official Anthropic TypeScript SDK, the
// Vercel AI SDK's Anthropic provider and LangChain's ChatAnthropic.
// ROUTER_URL is the router's root (no /v1), ROUTER_KEY a client key,
// MODEL a model name the router serves (a claude-* pattern matches it).
// The provider behind the router is a fake (fakes_test.go): it calls one
// of the offered tools unless the last user turn carries a tool result,
// and otherwise answers text that quotes the tool result, if any.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText, streamText } from 'ai';
import { ChatAnthropic } from '@langchain/anthropic';

const baseURL = process.env.ROUTER_URL;
const key = process.env.ROUTER_KEY;
const model = process.env.MODEL ?? 'claude-sonnet-4-5';
assert.ok(baseURL && key, 'ROUTER_URL and ROUTER_KEY must be set');

// maxRetries 0: a retry or failover is the router's job, not the SDK's.
const client = new Anthropic({ baseURL, apiKey: key, maxRetries: 0 });

const weatherTool = {
  name: 'get_weather',
  description: 'The forecast for a city',
  input_schema: {
    type: 'object',
    properties: {
      city: { type: 'string', minLength: 2 },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      days: { type: 'integer', minimum: 1, maximum: 7 },
    },
    required: ['city', 'unit', 'days'],
  },
};
const ask = { role: 'user', content: 'What is the weather in Paris?' };

function text(message) {
  return message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
}

// checkWeatherCall asserts that message ends in one call of get_weather
// whose input satisfies the tool's schema, and returns that block.
function checkWeatherCall(message) {
  assert.equal(message.stop_reason, 'tool_use');
  const calls = message.content.filter((b) => b.type === 'tool_use');
  assert.equal(calls.length, 1, JSON.stringify(message.content));
  const [call] = calls;
  assert.equal(call.name, 'get_weather');
  assert.match(call.id, /^[a-zA-Z0-9_-]+$/);
  assert.equal(typeof call.input.city, 'string');
  assert.ok(call.input.city.length >= 2);
  assert.ok(['celsius', 'fahrenheit'].includes(call.input.unit));
  assert.ok(Number.isInteger(call.input.days) && call.input.days >= 1 && call.input.days <= 7);
  return call;
}

// answerTo is the conversation that sends call's result back.
function answerTo(message, call) {
  return [
    ask,
    { role: 'assistant', content: message.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '{"temperature":21}' }] },
  ];
}

test('messages.create', async () => {
  const m = await client.messages.create({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Say hello' }] });
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.match(m.id, /^msg_/);
  assert.equal(m.stop_reason, 'end_turn');
  assert.ok(text(m).length > 0, 'no text');
  assert.ok(m.usage.input_tokens > 0 && m.usage.output_tokens > 0, JSON.stringify(m.usage));
});

test('messages.create with a system prompt and a string content', async () => {
  const m = await client.messages.create({
    model, max_tokens: 256, system: 'You are terse.', messages: [{ role: 'user', content: 'Say hello' }],
  });
  assert.ok(text(m).length > 0);
});

test('messages.stream accumulates the text', async () => {
  const stream = client.messages.stream({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Say hello' }] });
  let streamed = '';
  const events = [];
  stream.on('text', (delta) => { streamed += delta; });
  stream.on('streamEvent', (e) => events.push(e.type));
  const final = await stream.finalMessage();
  assert.ok(streamed.length > 0, 'no text deltas');
  assert.equal(streamed, text(final));
  assert.equal(final.stop_reason, 'end_turn');
  assert.ok(final.usage.output_tokens > 0, JSON.stringify(final.usage));
  assert.equal(events[0], 'message_start');
  assert.equal(events.at(-1), 'message_stop');
  assert.ok(events.includes('content_block_delta') && events.includes('message_delta'), events.join(','));
});

test('tool round trip', async () => {
  const first = await client.messages.create({ model, max_tokens: 512, tools: [weatherTool], messages: [ask] });
  const call = checkWeatherCall(first);
  const second = await client.messages.create({ model, max_tokens: 512, tools: [weatherTool], messages: answerTo(first, call) });
  assert.equal(second.stop_reason, 'end_turn');
  assert.match(text(second), /temperature.*21/);
});

test('tool round trip streamed', async () => {
  const first = await client.messages.stream({ model, max_tokens: 512, tools: [weatherTool], messages: [ask] }).finalMessage();
  const call = checkWeatherCall(first);
  let streamed = '';
  const s = client.messages.stream({ model, max_tokens: 512, tools: [weatherTool], messages: answerTo(first, call) });
  s.on('text', (d) => { streamed += d; });
  const second = await s.finalMessage();
  assert.equal(second.stop_reason, 'end_turn');
  assert.match(streamed, /temperature.*21/);
});

test('messages.countTokens', async () => {
  const r = await client.messages.countTokens({ model, tools: [weatherTool], messages: [ask] });
  assert.ok(Number.isInteger(r.input_tokens) && r.input_tokens > 0, JSON.stringify(r));
});

test('a model the router does not serve is a NotFoundError', async () => {
  await assert.rejects(
    client.messages.create({ model: 'gpt-unknown', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    (err) => {
      assert.ok(err instanceof Anthropic.NotFoundError, `got ${err?.constructor?.name}: ${err}`);
      assert.equal(err.status, 404);
      assert.equal(err.error?.type, 'error');
      assert.equal(err.error?.error?.type, 'not_found_error');
      return true;
    },
  );
});

test('no max_tokens is a BadRequestError', async () => {
  await assert.rejects(
    client.messages.create({ model, messages: [{ role: 'user', content: 'hi' }] }),
    (err) => {
      assert.ok(err instanceof Anthropic.BadRequestError, `got ${err?.constructor?.name}: ${err}`);
      assert.equal(err.error?.error?.type, 'invalid_request_error');
      assert.match(err.error?.error?.message ?? '', /max_tokens/);
      return true;
    },
  );
});

test('auth: authToken (Bearer)', async () => {
  const c = new Anthropic({ baseURL, authToken: key, apiKey: null, maxRetries: 0 });
  const m = await c.messages.create({ model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
  assert.ok(text(m).length > 0);
});

test('auth: x-api-key header', async () => {
  // This SDK sends apiKey as a Bearer token; Claude Code, the AI SDK and
  // LangChain send x-api-key. Set it by hand to check it here too.
  const c = new Anthropic({ baseURL, apiKey: null, authToken: null, defaultHeaders: { 'x-api-key': key }, maxRetries: 0 });
  const m = await c.messages.create({ model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
  assert.ok(text(m).length > 0);
});

test('auth: a wrong key is an AuthenticationError', async () => {
  const c = new Anthropic({ baseURL, apiKey: 'wrong-key', maxRetries: 0 });
  await assert.rejects(
    c.messages.create({ model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    (err) => {
      assert.ok(err instanceof Anthropic.AuthenticationError, `got ${err?.constructor?.name}: ${err}`);
      assert.equal(err.error?.error?.type, 'authentication_error');
      return true;
    },
  );
});

const vercel = createAnthropic({ baseURL: baseURL + '/v1', apiKey: key });

test('ai-sdk generateText', async () => {
  const r = await generateText({ model: vercel(model), prompt: 'Say hello', maxRetries: 0 });
  assert.ok(r.text.length > 0, 'no text');
  assert.equal(r.finishReason, 'stop');
  assert.ok(r.usage.inputTokens > 0, JSON.stringify(r.usage));
});

test('ai-sdk streamText', async () => {
  const errors = [];
  const r = streamText({ model: vercel(model), prompt: 'Say hello', maxRetries: 0, onError: ({ error }) => errors.push(error) });
  let streamed = '';
  for await (const delta of r.textStream) streamed += delta;
  assert.deepEqual(errors, []);
  assert.ok(streamed.length > 0, 'no text');
  assert.equal(streamed, await r.text);
  assert.equal(await r.finishReason, 'stop');
});

const chat = new ChatAnthropic({ model, anthropicApiUrl: baseURL, apiKey: key, maxRetries: 0, maxTokens: 256 });

test('langchain invoke', async () => {
  const m = await chat.invoke('Say hello');
  assert.equal(typeof m.content, 'string');
  assert.ok(m.content.length > 0, JSON.stringify(m.content));
  assert.ok(m.usage_metadata?.input_tokens > 0, JSON.stringify(m.usage_metadata));
});

test('langchain stream', async () => {
  let streamed = '';
  for await (const chunk of await chat.stream('Say hello')) {
    if (typeof chunk.content === 'string') streamed += chunk.content;
    else for (const part of chunk.content) if (part.type === 'text' || part.type === 'text_delta') streamed += part.text;
  }
  assert.ok(streamed.length > 0, 'no text');
});
