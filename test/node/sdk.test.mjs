// The official OpenAI Node SDK against a running llmrouter: chat (plain and
// streamed with usage), embeddings, models, and error parsing.
// ROUTER_URL (…/v1) and ROUTER_KEY come from node_test.go.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: process.env.ROUTER_URL, apiKey: process.env.ROUTER_KEY, maxRetries: 0 });

test('chat completion', async () => {
  const r = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(r.object, 'chat.completion');
  assert.match(r.choices[0].message.content, /Hello from the router/);
  assert.ok(r.usage.completion_tokens > 0);
});

test('streamed chat completion with usage', async () => {
  const stream = await client.chat.completions.create({
    model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'hi' }],
  });
  let text = '', usage = null, finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, 'Hello from the router');
  assert.equal(finish, 'stop');
  assert.ok(usage && usage.completion_tokens > 0);
});

test('embeddings', async () => {
  const r = await client.embeddings.create({ model: 'gpt-4o-mini', input: ['a', 'b'] });
  assert.equal(r.data.length, 2);
  assert.ok(r.data[1].embedding.length > 0);
});

test('models', async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ['gpt-4o-mini']);
});

test('unknown model is a parsed 404', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] }),
    (err) => err instanceof OpenAI.NotFoundError && err.code === 'model_not_found',
  );
});

test('wrong key is a parsed 401', async () => {
  const bad = new OpenAI({ baseURL: process.env.ROUTER_URL, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.models.list(), (err) => err instanceof OpenAI.AuthenticationError);
});
