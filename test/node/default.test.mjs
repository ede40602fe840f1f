// The official OpenAI Node SDK against the router on its embedded default
// (simulated providers, no keys): what a newcomer's client does besides
// text (issue 14, item 5). ROUTER_URL (…/v1) comes from default_test.go;
// authentication is off.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';

const client = new OpenAI({ baseURL: process.env.ROUTER_URL, apiKey: 'unused', maxRetries: 0 });
const model = 'gpt-4o-mini';

const Step = z.object({ explanation: z.string(), output: z.string() });
const Person = z.object({
  name: z.string().min(3).max(20),
  age: z.number().int().min(18).max(99),
  email: z.string().email(),
  website: z.string().url(),
  born: z.string().date(),
  updated: z.string().datetime(),
  id: z.string().uuid(),
  code: z.string().regex(/^[A-Z]{2}-\d{3}$/),
  tags: z.array(z.string()).min(2).max(3),
  role: z.enum(['admin', 'user']),
  nickname: z.string().nullable(),
  score: z.number().positive(),
  steps: z.array(Step),
  first: Step,
  shape: z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('circle'), radius: z.number() }),
    z.object({ kind: z.literal('square'), side: z.number() }),
  ]),
});

const Weather = z.object({ city: z.string().min(2), unit: z.enum(['celsius', 'fahrenheit']), days: z.number().int().min(1).max(7) });
const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The forecast for a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', minLength: 2 },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        days: { type: 'integer', minimum: 1, maximum: 7 },
      },
      required: ['city', 'unit', 'days'],
      additionalProperties: false,
    },
  },
};

test('chat.completions.parse with a zod schema', async () => {
  const r = await client.chat.completions.parse({
    model,
    messages: [{ role: 'user', content: 'Invent a person' }],
    response_format: zodResponseFormat(Person, 'person'),
  });
  const m = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.ok(m.parsed, `no parsed value in ${m.content}`);
  assert.deepEqual(Person.parse(JSON.parse(m.content)), m.parsed);
  assert.ok(r.usage.completion_tokens > 0 && r.usage.prompt_tokens > 0);
});

test('streamed parse with a zod schema', async () => {
  const stream = client.chat.completions.stream({
    model,
    messages: [{ role: 'user', content: 'Invent a person' }],
    response_format: zodResponseFormat(Person, 'person'),
    stream_options: { include_usage: true },
  });
  let deltas = 0;
  stream.on('content.delta', () => { deltas++; });
  const r = await stream.finalChatCompletion();
  assert.ok(Person.safeParse(r.choices[0].message.parsed).success, r.choices[0].message.content);
  assert.ok(deltas > 1, `JSON came in ${deltas} delta(s), want fragments`);
  assert.ok(r.usage.completion_tokens > 0);
});

test('a required function tool returns a call with valid arguments', async () => {
  const r = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    tools: [weatherTool],
    tool_choice: 'required',
  });
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'tool_calls');
  assert.equal(c.message.content, null);
  assert.equal(c.message.tool_calls.length, 1);
  const call = c.message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  assert.match(call.id, /^call_/);
  Weather.strict().parse(JSON.parse(call.function.arguments));
  assert.ok(r.usage.completion_tokens > 0);
});

test('a named tool, parsed with zodFunction', async () => {
  const r = await client.chat.completions.parse({
    model,
    messages: [{ role: 'user', content: 'Look it up' }],
    tools: [
      zodFunction({ name: 'get_time', parameters: z.object({ zone: z.enum(['UTC', 'CET']) }) }),
      zodFunction({ name: 'get_weather', parameters: Weather }),
    ],
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
  });
  const call = r.choices[0].message.tool_calls[0];
  assert.equal(call.function.name, 'get_weather');
  assert.deepEqual(call.function.parsed_arguments, Weather.parse(JSON.parse(call.function.arguments)));
});

test('tool_choice none answers with text', async () => {
  const r = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'hi' }], tools: [weatherTool], tool_choice: 'none',
  });
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.match(r.choices[0].message.content, /You said: hi/);
});

test('a streamed tool call assembles like OpenAI\'s', async () => {
  const stream = client.chat.completions.stream({
    model,
    messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    tools: [weatherTool],
    tool_choice: 'required',
  });
  const done = [];
  stream.on('tool_calls.function.arguments.done', (e) => done.push(e));
  const r = await stream.finalChatCompletion();
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  assert.equal(done.length, 1);
  assert.equal(done[0].name, 'get_weather');
  Weather.parse(JSON.parse(done[0].arguments));
  assert.equal(r.choices[0].message.tool_calls[0].function.arguments, done[0].arguments);
});

test('runTools: call, result, final text', async () => {
  const seen = [];
  const runner = client.chat.completions.runTools({
    model,
    messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    tools: [{
      type: 'function',
      function: {
        name: 'get_weather',
        parameters: weatherTool.function.parameters,
        parse: (args) => Weather.parse(JSON.parse(args)),
        function: (args) => { seen.push(args); return { temperature: 21 }; },
      },
    }],
  });
  const text = await runner.finalContent();
  assert.equal(seen.length, 1);
  assert.match(text, /get_weather returned: \{"temperature":21\}/);
});

test('embeddings: the SDK\'s base64 default, dimensions, float', async () => {
  const b64 = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['hello', 'world'], dimensions: 256 });
  assert.equal(b64.data.length, 2);
  for (const e of b64.data) {
    assert.equal(e.embedding.length, 256);
    const norm = Math.hypot(...e.embedding);
    assert.ok(Math.abs(norm - 1) < 1e-4, `norm ${norm}`);
  }
  const floats = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['hello', 'world'], dimensions: 256, encoding_format: 'float' });
  for (const [i, e] of floats.data.entries()) {
    e.embedding.forEach((x, j) => assert.ok(Math.abs(x - b64.data[i].embedding[j]) < 1e-6));
  }
  assert.ok(floats.usage.prompt_tokens > 0);
});

// The Responses API on the same simulated providers (translated onto chat
// completions by the router).
const responseTool = { type: 'function', ...weatherTool.function, strict: true };

test('responses.create with a required function tool, then its output', async () => {
  const r = await client.responses.create({
    model,
    input: 'What is the weather in Paris?',
    tools: [responseTool],
    tool_choice: 'required',
  });
  assert.equal(r.status, 'completed');
  const calls = r.output.filter((o) => o.type === 'function_call');
  assert.equal(calls.length, 1, JSON.stringify(r.output));
  assert.equal(calls[0].name, 'get_weather');
  assert.ok(calls[0].call_id);
  Weather.strict().parse(JSON.parse(calls[0].arguments));
  assert.ok(r.usage.output_tokens > 0 && r.usage.input_tokens > 0);

  const next = await client.responses.create({
    model,
    previous_response_id: r.id,
    input: [{ type: 'function_call_output', call_id: calls[0].call_id, output: '{"temperature":21}' }],
    tools: [responseTool],
  });
  assert.equal(next.status, 'completed');
  assert.match(next.output_text, /get_weather returned: \{"temperature":21\}/);
});

test('responses.parse with zodTextFormat', async () => {
  const r = await client.responses.parse({
    model,
    input: 'Invent a person',
    text: { format: zodTextFormat(Person, 'person') },
  });
  assert.ok(Person.safeParse(r.output_parsed).success, r.output_text);
});

test('a streamed Responses function call', async () => {
  const stream = client.responses.stream({
    model,
    input: 'What is the weather in Paris?',
    tools: [responseTool],
    tool_choice: { type: 'function', name: 'get_weather' },
  });
  let argDeltas = 0;
  stream.on('response.function_call_arguments.delta', () => { argDeltas++; });
  const r = await stream.finalResponse();
  const call = r.output.find((o) => o.type === 'function_call');
  assert.ok(call, JSON.stringify(r.output));
  Weather.parse(JSON.parse(call.arguments));
  assert.ok(argDeltas >= 1);
});
