// The official TypeScript SDK client (pinned in package.json) against `dorm serve
// --fixtures testing`: tools end to end, and a session that outlives a SIGKILL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startServe } from './lib/dorm_process.mjs';
import { post, sseMessages, openSession } from './lib/mcp_http.mjs';

const FIXTURES = ['echo', 'sleep', 'kv_put', 'kv_get', 'spin', 'flood', 'announce', 'ask', 'add',
  'counter_get', 'counter_increment', 'tally', 'ledger_append', 'ledger_read'];

async function connectClient(t, url, { sessionId, protocolVersion } = {}) {
  const transport = new StreamableHTTPClientTransport(url, sessionId ? { sessionId } : {});
  // A client rebuilt from a session id skips initialize, so it must be told the revision.
  if (protocolVersion) transport.setProtocolVersion(protocolVersion);
  const client = new Client({ name: 'dorm-e2e', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  return { client, transport };
}

const textOf = (result) => result.content.map((c) => c.text).join('');

test('SDK client: list the fixtures, echo, kv_put then kv_get', async (t) => {
  const { url } = await startServe(t, { extraArgs: ['--fixtures', 'testing'] });
  const { client } = await connectClient(t, url);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((x) => x.name), FIXTURES);
  assert.equal(tools.find((x) => x.name === 'echo').inputSchema.required[0], 'text');

  assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'hello dorm' } })), 'hello dorm');
  await client.callTool({ name: 'kv_put', arguments: { key: 'color', value: 'teal' } });
  assert.equal(textOf(await client.callTool({ name: 'kv_get', arguments: { key: 'color' } })), 'teal');
  const bad = await client.callTool({ name: 'echo', arguments: { text: 42 } });
  assert.equal(bad.isError, true);
});

test('SDK client: SIGKILL, restart on the same port and data, the same session id lists tools and reads its value', async (t) => {
  const first = await startServe(t, { extraArgs: ['--fixtures', 'testing'] });
  const { client, transport } = await connectClient(t, first.url);
  await client.callTool({ name: 'kv_put', arguments: { key: 'survives', value: 'yes' } });
  const sessionId = transport.sessionId;
  const protocolVersion = transport.protocolVersion;
  assert.ok(sessionId);
  first.proc.kill('SIGKILL');
  await first.proc.waitForExit();

  const second = await startServe(t, { dataDir: first.dataDir, listen: `127.0.0.1:${first.port}`, extraArgs: ['--fixtures', 'testing'] });
  const again = await connectClient(t, second.url, { sessionId, protocolVersion });
  assert.equal(again.transport.sessionId, sessionId);
  const { tools } = await again.client.listTools();
  assert.deepEqual(tools.map((x) => x.name), FIXTURES);
  assert.equal(textOf(await again.client.callTool({ name: 'kv_get', arguments: { key: 'survives' } })), 'yes');
});

test('SDK client: pages of 2 list every tool once; a bad cursor is -32602', async (t) => {
  const { url } = await startServe(t, { extraArgs: ['--fixtures', 'testing', '--tools-page-size', '2'] });
  const { client } = await connectClient(t, url);
  const names = [];
  let cursor;
  let pages = 0;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    assert.ok(page.tools.length <= 2);
    names.push(...page.tools.map((x) => x.name));
    cursor = page.nextCursor;
    pages += 1;
  } while (cursor && pages < 10);
  assert.deepEqual(names, FIXTURES);
  assert.equal(pages, Math.ceil(FIXTURES.length / 2));
  await assert.rejects(client.listTools({ cursor: 'not-a-cursor' }), (e) => e.code === -32602);
});

test('with --http-threads 1, a ping on another session is answered while spin holds its own', async (t) => {
  const { url, proc } = await startServe(t, { extraArgs: ['--fixtures', 'testing', '--http-threads', '1', '--log-level', 'debug'] });
  const busy = await openSession(url);
  const idle = await openSession(url);
  const order = [];
  const spin = post(url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'spin', arguments: { ms: 5000 } } }, { session: busy })
    .then((r) => { order.push('spin'); return r; });
  // The ping goes out only once the spin is running (the server logs its start).
  await proc.waitForStderr(/tool_call_started session=\S+ tool=spin/);
  const ping = await post(url, { jsonrpc: '2.0', id: 2, method: 'ping' }, { session: idle });
  order.push('ping');
  assert.equal(ping.res.status, 200);
  assert.deepEqual(sseMessages(ping.text), [{ jsonrpc: '2.0', id: 2, result: {} }]);
  const spun = await spin;
  assert.equal(sseMessages(spun.text)[0].result.content[0].text, 'spun');
  assert.deepEqual(order, ['ping', 'spin']);
});

test('SDK client: a second client with the first one\'s resumption token gets the result; so does one after SIGKILL and restart', async (t) => {
  const { CallToolResultSchema } = await import('@modelcontextprotocol/sdk/types.js');
  const first = await startServe(t, { extraArgs: ['--fixtures', 'testing'] });
  const one = await connectClient(t, first.url);
  const tokens = [];
  const result = await one.client.request(
    { method: 'tools/call', params: { name: 'echo', arguments: { text: 'resumable' } } },
    CallToolResultSchema,
    { onresumptiontoken: (token) => tokens.push(token) },
  );
  assert.equal(textOf(result), 'resumable');
  // The priming event's id comes first: a resume from it replays the whole stream.
  assert.ok(tokens.length >= 2, `tokens: ${tokens}`);
  assert.match(tokens[0], /^[0-9a-f]{16}-0$/);
  const sessionId = one.transport.sessionId;
  const protocolVersion = one.transport.protocolVersion;

  const two = await connectClient(t, first.url, { sessionId, protocolVersion });
  const replayed = await two.client.request(
    { method: 'tools/call', params: { name: 'echo', arguments: { text: 'ignored: not sent again' } } },
    CallToolResultSchema,
    { resumptionToken: tokens[0] },
  );
  assert.equal(textOf(replayed), 'resumable');

  first.proc.kill('SIGKILL');
  await first.proc.waitForExit();
  const second = await startServe(t, { dataDir: first.dataDir, listen: `127.0.0.1:${first.port}`, extraArgs: ['--fixtures', 'testing'] });
  const three = await connectClient(t, second.url, { sessionId, protocolVersion });
  const afterRestart = await three.client.request(
    { method: 'tools/call', params: { name: 'echo', arguments: { text: 'ignored' } } },
    CallToolResultSchema,
    { resumptionToken: tokens[0] },
  );
  assert.equal(textOf(afterRestart), 'resumable');
});

// A client that answers elicitation and sampling with the given handlers.
async function connectAsking(t, url, { elicit, sample, capabilities }) {
  const transport = new StreamableHTTPClientTransport(url);
  const client = new Client({ name: 'dorm-e2e-asking', version: '1.0.0' }, { capabilities });
  if (elicit) client.setRequestHandler(ElicitRequestSchema, elicit);
  if (sample) client.setRequestHandler(CreateMessageRequestSchema, sample);
  await client.connect(transport);
  t.after(() => client.close());
  return client;
}

const askElicit = {
  name: 'ask',
  arguments: {
    method: 'elicitation/create',
    params: { message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
  },
};

test('SDK client: a tool asks for elicitation and gets the accepted content, a decline and a cancel', async (t) => {
  const { url } = await startServe(t, { extraArgs: ['--fixtures', 'testing'] });
  const answers = [
    { action: 'accept', content: { name: 'Ada' } },
    { action: 'decline' },
    { action: 'cancel' },
  ];
  const seen = [];
  const client = await connectAsking(t, url, {
    capabilities: { elicitation: {} },
    elicit: async (request) => { seen.push(request.params.message); return answers[seen.length - 1]; },
  });
  for (const expected of answers) {
    const result = await client.callTool(askElicit);
    assert.notEqual(result.isError, true, textOf(result));
    assert.deepEqual(JSON.parse(textOf(result)), expected);
  }
  assert.deepEqual(seen, ['Your name?', 'Your name?', 'Your name?']);
});

test('SDK client: a sampling round trip; without the capability the tool errors at once', async (t) => {
  const { url } = await startServe(t, { extraArgs: ['--fixtures', 'testing'] });
  const client = await connectAsking(t, url, {
    capabilities: { sampling: {} },
    sample: async (request) => ({
      role: 'assistant', model: 'test-model',
      content: { type: 'text', text: `echo: ${request.params.messages[0].content.text}` },
    }),
  });
  const sampled = await client.callTool({
    name: 'ask',
    arguments: { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 10 } },
  });
  assert.notEqual(sampled.isError, true, textOf(sampled));
  assert.equal(JSON.parse(textOf(sampled)).content.text, 'echo: hi');

  // This client declared no elicitation capability: a clear tool error, not a hang.
  const refused = await client.callTool(askElicit);
  assert.equal(refused.isError, true);
  assert.match(textOf(refused), /did not declare the elicitation capability/);
});
