// Two `dorm serve` nodes over one shared PostgreSQL store (lib/pg_server.mjs), behind a
// TCP balancer the test moves, as a deploy or a failover does: the official SDK client
// stores a value and starts a long call on node a; node b forwards the session's requests
// to a while a lives; a is SIGKILLed and the balancer now sends to b, which waits
// for a's lease to run out, takes the session over, runs the reaper — the cut call fails
// with -32001 `server_restart` — and serves the same session with its value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startPrimedCall } from './lib/dorm_process.mjs';
import { startBalancer, startNode } from './lib/nodes.mjs';
import { startPostgres } from './lib/pg_server.mjs';

test('two nodes on one PostgreSQL store: a dead node\'s session is taken over and its cut call fails -32001', async (t) => {
  const pg = await startPostgres(t);
  const storage = `${pg.uri}&table=e2e_nodes&shared=true&lock_wait=0`;
  const a = await startNode(t, storage, 'a');
  const b = await startNode(t, storage, 'b');
  assert.match(a.stderr, /node_started/);

  const balancer = await startBalancer(t);
  balancer.target = Number(a.url.port);
  const transport = new StreamableHTTPClientTransport(balancer.url);
  const client = new Client({ name: 'dorm-e2e-nodes', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  const stored = await client.callTool({ name: 'kv_put', arguments: { key: 'colour', value: 'teal' } });
  assert.equal(stored.isError ?? false, false);

  // While a lives, b does not serve a's session: it forwards the request to a, and relays
  // a's answer. A request forwarded once already (Dorm-Forwarded-By) is not sent on again:
  // b answers 421 naming the node that serves it.
  const misdirected = (extra) => fetch(b.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': transport.sessionId,
      'mcp-protocol-version': transport.protocolVersion ?? '2025-11-25',
      ...extra,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 'x', method: 'tools/call',
      params: { name: 'kv_get', arguments: { key: 'colour' } } }),
  });
  const forwarded = await misdirected({});
  assert.equal(forwarded.status, 200);
  assert.match(await forwarded.text(), /"text":"teal"/);
  assert.deepEqual(pg.query('SELECT node_id FROM dorm_leases'), [['a']]);
  const looped = await misdirected({ 'dorm-forwarded-by': 'c' });
  assert.equal(looped.status, 421);
  assert.equal(looped.headers.get('dorm-node'), 'a');
  const refusal = await looped.json();
  assert.match(refusal.error.message, /served by node a at http:\/\/127\.0\.0\.1:/);

  const { primed: primedSeen, outcome } = startPrimedCall(client, 'sleep', { ms: 30000 });
  await primedSeen;

  balancer.target = Number(b.url.port);
  const killed = Date.now();
  a.kill('SIGKILL');
  await a.waitForExit();

  const result = await outcome;
  const failedAfter = Date.now() - killed;
  assert.equal(result.ok, false, 'the killed call resolved instead of failing');
  assert.equal(result.error.code, -32001);
  assert.equal(result.error.data?.reason, 'server_restart');
  t.diagnostic(`the cut call failed ${failedAfter} ms after the SIGKILL (lease 2000 ms)`);

  const read = await client.callTool({ name: 'kv_get', arguments: { key: 'colour' } });
  assert.equal(read.isError ?? false, false);
  assert.equal(read.content[0].text, 'teal');

  b.kill('SIGTERM');
  const exit = await b.waitForExit();
  assert.equal(exit.code, 0, b.stderr);
});

test('two nodes on one PostgreSQL store: a node stopped gracefully hands its sessions over at once', async (t) => {
  const pg = await startPostgres(t);
  const storage = `${pg.uri}&table=e2e_handover&shared=true&lock_wait=0`;
  const a = await startNode(t, storage, 'a');
  const b = await startNode(t, storage, 'b');
  assert.deepEqual(pg.query('SELECT node_id FROM dorm_nodes ORDER BY node_id'), [['a'], ['b']]);

  const balancer = await startBalancer(t);
  balancer.target = Number(a.url.port);
  const client = new Client({ name: 'dorm-e2e-handover', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(balancer.url));
  t.after(() => client.close());
  const stored = await client.callTool({ name: 'kv_put', arguments: { key: 'colour', value: 'amber' } });
  assert.equal(stored.isError ?? false, false);
  assert.deepEqual(pg.query("SELECT count(*) FROM dorm_leases WHERE node_id = 'a'"), [['1']]);

  // A rolling deploy's stop: a drains, each session releases its lease as it stops, and a
  // leaves the node records. Nothing of a's is left for b to wait out.
  balancer.target = Number(b.url.port);
  a.kill('SIGTERM');
  assert.equal((await a.waitForExit()).code, 0, a.stderr);
  assert.deepEqual(pg.query("SELECT count(*) FROM dorm_leases WHERE node_id = 'a'"), [['0']]);
  assert.deepEqual(pg.query('SELECT node_id FROM dorm_nodes'), [['b']]);

  const read = await client.callTool({ name: 'kv_get', arguments: { key: 'colour' } });
  assert.equal(read.isError ?? false, false);
  assert.equal(read.content[0].text, 'amber');
  assert.deepEqual(pg.query("SELECT node_id FROM dorm_leases"), [['b']]);

  b.kill('SIGTERM');
  assert.equal((await b.waitForExit()).code, 0, b.stderr);
});
