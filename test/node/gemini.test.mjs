// The Google Gen AI JS SDK (@google/genai) against the router's Gemini
// API front door (run by gemini_test.go): generate, stream, a function
// call and its response, countTokens, the model list. ROUTER_URL is the
// router's root, ROUTER_KEY a client key, MODEL a model name the router
// serves. The provider behind the router is a fake (fakes_test.go,
// gemini_fake_test.go): it calls one of the offered functions unless the
// last user turn carries a functionResponse, and otherwise answers text
// that quotes the response, if any.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GoogleGenAI, Type } from '@google/genai';

const baseUrl = process.env.ROUTER_URL;
const apiKey = process.env.ROUTER_KEY;
const model = process.env.MODEL ?? 'gemini-2.5-flash';
assert.ok(baseUrl && apiKey, 'ROUTER_URL and ROUTER_KEY must be set');

const ai = new GoogleGenAI({ apiKey, httpOptions: { baseUrl } });

const weather = {
  name: 'get_weather',
  description: 'The forecast for a city',
  parameters: {
    type: Type.OBJECT,
    properties: {
      city: { type: Type.STRING },
      days: { type: Type.INTEGER, minimum: 1, maximum: 7 },
    },
    required: ['city', 'days'],
  },
};
const ask = 'What is the weather in Paris?';

test('generateContent', async () => {
  const r = await ai.models.generateContent({ model, contents: 'Say hello.', config: { maxOutputTokens: 64 } });
  assert.match(r.text, /Hello from/);
  assert.ok(r.usageMetadata?.promptTokenCount > 0, JSON.stringify(r.usageMetadata));
  assert.equal(r.candidates[0].finishReason, 'STOP');
});

test('generateContentStream', async () => {
  const stream = await ai.models.generateContentStream({ model, contents: 'Say hello.' });
  let text = '';
  let last;
  for await (const chunk of stream) {
    text += chunk.text ?? '';
    last = chunk;
  }
  assert.match(text, /Hello from/);
  assert.equal(last.candidates[0].finishReason, 'STOP');
  assert.ok(last.usageMetadata?.totalTokenCount > 0, JSON.stringify(last));
});

test('function call and response', async () => {
  const config = { tools: [{ functionDeclarations: [weather] }] };
  const chat = ai.chats.create({ model, config });
  const first = await chat.sendMessage({ message: ask });
  const calls = first.functionCalls ?? [];
  assert.equal(calls.length, 1, JSON.stringify(first.candidates));
  assert.equal(calls[0].name, 'get_weather');
  assert.equal(typeof calls[0].args.city, 'string');
  const second = await chat.sendMessage({
    message: [{ functionResponse: { id: calls[0].id, name: 'get_weather', response: { forecast: 'sunny-42' } } }],
  });
  assert.match(second.text, /sunny-42/);
});

test('function call streamed', async () => {
  const stream = await ai.models.generateContentStream({
    model, contents: ask, config: { tools: [{ functionDeclarations: [weather] }] },
  });
  const calls = [];
  for await (const chunk of stream) calls.push(...(chunk.functionCalls ?? []));
  assert.equal(calls.length, 1);
  assert.equal(calls[0].name, 'get_weather');
});

test('countTokens', async () => {
  const r = await ai.models.countTokens({ model, contents: 'How many tokens is this?' });
  assert.ok(r.totalTokens > 0, JSON.stringify(r));
});

test('models', async () => {
  const m = await ai.models.get({ model });
  assert.equal(m.name, `models/${model}`);
  const names = [];
  for await (const x of await ai.models.list()) names.push(x.name);
  assert.ok(names.length > 0);
});

test('errors in Google shape', async () => {
  const bad = new GoogleGenAI({ apiKey: 'wrong-key', httpOptions: { baseUrl } });
  await assert.rejects(bad.models.generateContent({ model, contents: 'hi' }), (e) => e.status === 401);
  await assert.rejects(ai.models.generateContent({ model: 'no-such-model', contents: 'hi' }), (e) => e.status === 404);
  await assert.rejects(
    ai.models.generateContent({ model, contents: 'hi', config: { maxOutputTokens: 2 ** 40 } }),
    (e) => e.status === 400 && /maxOutputTokens/.test(e.message),
  );
});
