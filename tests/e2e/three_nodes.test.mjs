// Three `dorm serve` nodes over one shared PostgreSQL store (lib/pg_server.mjs), driven by
// the official SDK client:
//  1. A client pinned to node a works with a session node b serves: a forwards each request
//     to b and relays the answer, SSE streams included. b is SIGKILLed mid-call: the call
//     fails -32001 `server_restart` at the pinned client through a, which takes the session
//     over once b's lease runs out; a client pinned to c then reads the session's value
//     through c's forwarding to a.
//  2. A rolling restart of all three nodes under load (each node replaced by a new process
//     behind its balancer, the old one stopped with SIGTERM and handing its sessions over):
//     no call hangs, and every session's ledger holds each acknowledged append once.
//  3. `dorm deploy-sim --nodes 3 --storage postgres://…`: its kill, term and rolling rows
//     across three nodes, with the outcome each must have, and the store left empty.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DormProcess, startPrimedCall } from './lib/dorm_process.mjs';
import { startBalancer, startNode } from './lib/nodes.mjs';
import { startPostgres } from './lib/pg_server.mjs';

const LEASE_MS = 2000;  // startNode's --lease-ms
const RETRY_MS = 1500;  // startNode's --retry-ms

// A client that uses session `sessionId` through `url` without initializing it again: the
// SDK skips initialize when its transport already has a session.
async function pinnedClient(t, url, sessionId, protocolVersion) {
  const transport = new StreamableHTTPClientTransport(url, { sessionId });
  transport.setProtocolVersion(protocolVersion);
  const client = new Client({ name: 'dorm-e2e-pinned', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  return client;
}

function leaseHolders(pg) {
  return pg.query('SELECT node_id FROM dorm_leases ORDER BY node_id').map((row) => row[0]);
}

test('three nodes: a client pinned to a node reaches a session another serves, and its call fails -32001 when that node dies', async (t) => {
  const pg = await startPostgres(t);
  const storage = `${pg.uri}&table=e2e_three&shared=true&lock_wait=0`;
  const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((id) => startNode(t, storage, id)));

  // The session begins on b, which holds its lease from then on.
  const ownerTransport = new StreamableHTTPClientTransport(b.url);
  const owner = new Client({ name: 'dorm-e2e-owner', version: '1.0.0' });
  await owner.connect(ownerTransport);
  t.after(() => owner.close());
  const stored = await owner.callTool({ name: 'kv_put', arguments: { key: 'colour', value: 'teal' } });
  assert.equal(stored.isError ?? false, false);
  assert.deepEqual(leaseHolders(pg), ['b']);

  // Pinned to a: every request is forwarded to b, and b keeps the session.
  const pinned = await pinnedClient(t, a.url, ownerTransport.sessionId, ownerTransport.protocolVersion);
  const read = await pinned.callTool({ name: 'kv_get', arguments: { key: 'colour' } });
  assert.equal(read.isError ?? false, false);
  assert.equal(read.content[0].text, 'teal');
  const listed = await pinned.listTools();
  assert.ok(listed.tools.some((tool) => tool.name === 'sleep'));
  assert.deepEqual(leaseHolders(pg), ['b']);
  // a counts what it sent on (GET /metrics, open to loopback).
  const metrics = await (await fetch(`http://127.0.0.1:${a.url.port}/metrics`)).text();
  const forwards = Number(/^dorm_forwarded_requests_total (\S+)$/m.exec(metrics)?.[1]);
  assert.ok(forwards >= 2, metrics);
  assert.match(metrics, /^dorm_forward_unreachable_total 0$/m);

  // A long call through a, whose stream a relays from b (its priming event included).
  const { primed, outcome } = startPrimedCall(pinned, 'sleep', { ms: 30000 });
  await primed;
  const killed = Date.now();
  b.kill('SIGKILL');
  await b.waitForExit();

  // The relayed stream breaks; the client resumes it at a, which cannot reach b, presumes
  // it dead, waits out its lease, takes the session over and runs the reaper.
  const result = await outcome;
  const failedAfter = Date.now() - killed;
  assert.equal(result.ok, false, 'the killed call resolved instead of failing');
  assert.equal(result.error.code, -32001);
  assert.equal(result.error.data?.reason, 'server_restart');
  t.diagnostic(`the cut call failed at the client pinned to a ${failedAfter} ms after b's SIGKILL ` +
               `(lease ${LEASE_MS} ms + retry ${RETRY_MS} ms + 1 s = ${LEASE_MS + RETRY_MS + 1000} ms)`);
  assert.deepEqual(leaseHolders(pg), ['a']);

  // Nothing of the session is lost, and c reaches it through a.
  const viaC = await pinnedClient(t, c.url, ownerTransport.sessionId, ownerTransport.protocolVersion);
  const again = await viaC.callTool({ name: 'kv_get', arguments: { key: 'colour' } });
  assert.equal(again.isError ?? false, false);
  assert.equal(again.content[0].text, 'teal');
  assert.deepEqual(leaseHolders(pg), ['a']);

  for (const node of [a, c]) {
    node.kill('SIGTERM');
    assert.equal((await node.waitForExit()).code, 0, node.stderr);
  }
});

test('three nodes: a rolling restart of every node under load leaves no call hung, none lost or run twice', async (t) => {
  const pg = await startPostgres(t);
  const storage = `${pg.uri}&table=e2e_rolling&shared=true&lock_wait=0`;
  // One balancer per node slot: its clients stay pinned to the slot while the process
  // behind it is replaced.
  const slots = await Promise.all(['a', 'b', 'c'].map(async (name) => {
    const balancer = await startBalancer(t);
    const node = await startNode(t, storage, `${name}1`);
    balancer.target = Number(node.url.port);
    return { name, balancer, node };
  }));

  const CLIENTS = 6;
  const CALL_TIMEOUT_MS = 20_000;
  const sessions = [];
  for (let i = 0; i < CLIENTS; ++i) {
    const client = new Client({ name: `dorm-e2e-rolling-${i}`, version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(slots[i % slots.length].balancer.url));
    t.after(() => client.close());
    sessions.push({ client, acked: [], sent: 0, ok: 0, errors: [], hung: 0 });
  }

  // Each client appends to its session's ledger, one call after another, until told to
  // stop: a ledger shows an append that was lost or ran twice (say, on two nodes at once).
  let running = true;
  const loops = sessions.map(async (s, i) => {
    while (running) {
      const token = `${i}-${++s.sent}`;
      try {
        const r = await s.client.callTool({ name: 'ledger_append', arguments: { token } },
          undefined, { timeout: CALL_TIMEOUT_MS });
        if (r.isError) {
          s.errors.push(`tool error: ${JSON.stringify(r.content)}`);
        } else {
          s.acked.push(token);
          ++s.ok;
        }
      } catch (error) {
        if (/timed out/i.test(error.message)) ++s.hung;
        s.errors.push(String(error.message));
      }
    }
  });
  const answered = () => sessions.reduce((sum, s) => sum + s.ok + s.errors.length, 0);
  // Progress, not time: waits until `more` further calls have been answered (bounded).
  async function progress(more) {
    const goal = answered() + more;
    const deadline = Date.now() + 30_000;
    while (answered() < goal) {
      assert.ok(Date.now() < deadline, `no progress: ${answered()} of ${goal} calls answered`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  await progress(60);
  for (const slot of slots) {
    // A rolling deploy: the successor first, then the balancer moves, then the old node
    // stops gracefully and hands its sessions over to whichever node asks for them.
    const old = slot.node;
    slot.node = await startNode(t, storage, `${slot.name}2`);
    slot.balancer.target = Number(slot.node.url.port);
    old.kill('SIGTERM');
    const exit = await old.waitForExit();
    assert.equal(exit.code, 0, old.stderr);
    assert.match(old.stderr, /hand_over_started/);
    await progress(60);
  }
  running = false;
  await Promise.all(loops);

  const hung = sessions.reduce((sum, s) => sum + s.hung, 0);
  const ok = sessions.reduce((sum, s) => sum + s.ok, 0);
  const errors = sessions.flatMap((s) => s.errors);
  t.diagnostic(`${ok} calls acknowledged, ${errors.length} failed, ${hung} hung over three restarts` +
               (errors.length ? `; failures: ${[...new Set(errors)].slice(0, 5).join(' | ')}` : ''));
  assert.equal(hung, 0, 'a call hung');
  assert.ok(ok > 180);

  // Every session's ledger holds each acknowledged append exactly once, in order; an
  // append whose answer was lost is there at most once.
  for (const s of sessions) {
    const read = await s.client.callTool({ name: 'ledger_read', arguments: {} });
    assert.equal(read.isError ?? false, false);
    const tokens = read.structuredContent.tokens;
    assert.equal(new Set(tokens).size, tokens.length, `an append ran twice: ${tokens}`);
    const position = new Map(tokens.map((token, at) => [token, at]));
    let last = -1;
    for (const token of s.acked) {
      assert.ok(position.has(token), `acknowledged ${token} is not in the ledger`);
      assert.ok(position.get(token) > last, `${token} is out of order`);
      last = position.get(token);
    }
  }
  // The old nodes left: none of them holds a lease or a node record.
  const nodes = pg.query('SELECT node_id FROM dorm_nodes ORDER BY node_id').map((row) => row[0]);
  assert.deepEqual(nodes, ['a2', 'b2', 'c2']);
  for (const holder of leaseHolders(pg)) assert.match(holder, /2$/);

  for (const slot of slots) {
    slot.node.kill('SIGTERM');
    assert.equal((await slot.node.waitForExit()).code, 0, slot.node.stderr);
  }
});

test('deploy-sim --nodes 3: a node killed fails only its own calls, a term or rolling deploy answers every call', async (t) => {
  const pg = await startPostgres(t);
  // 6 sessions of 2 calls, session i's client on node i % 3: the kill of node 1 cuts the
  // calls of sessions 0 and 3, which fail -32001 once the successor has waited out the
  // lease; the others run on nodes 2 and 3 and are answered. A 4 s retry hint lets a
  // sanitizer build's successor bind before the clients' resumes (deploy_sim.test.mjs).
  const sim = new DormProcess(t, ['deploy-sim', '--nodes', '3', '--storage', pg.uri, '--mode', 'all',
    '--sessions', '6', '--calls-per-session', '2', '--deploys', '1', '--call-ms', '1000-3000',
    '--drain-timeout', '10', '--retry-ms', '4000', '--lease-ms', '2000', '--client-timeout', '30',
    '--format', 'json']);
  const { code } = await sim.waitForExit(300_000);
  assert.equal(code, 0, sim.stderr);
  const report = JSON.parse(sim.stdoutLines.join('\n'));
  assert.equal(report.nodes, 3);
  assert.equal(report.storage, 'postgres');
  const rows = Object.fromEntries(report.rows.map((row) => [row.mode, row]));
  assert.deepEqual(Object.keys(rows), ['kill', 'term', 'rolling']);
  const kill = rows.kill;
  assert.equal(kill.calls, 12);
  assert.deepEqual({ answered: kill.answered, failed_fast: kill.failed_fast, hung: kill.hung },
    { answered: 8, failed_fast: 4, hung: 0 }, JSON.stringify(kill));
  assert.equal(kill.reasons.server_restart, 4);
  for (const row of [rows.term, rows.rolling]) {
    assert.deepEqual({ answered: row.answered, hung: row.hung }, { answered: 12, hung: 0 }, JSON.stringify(row));
  }
  // Every node of the rolling row was replaced by one bound beside it on its port.
  assert.equal(rows.rolling.unanswered_probes, 0, JSON.stringify(rows.rolling));
  t.diagnostic(`kill: errors ${kill.error_ms_p50}-${kill.error_ms_p99} ms after the SIGKILL (lease 2000 ms, retry 4000 ms); ` +
               `rolling: longest unanswered ${rows.rolling.unanswered_ms_max} ms`);
  // deploy-sim emptied its table after the last row, and every node stopped gracefully left.
  assert.deepEqual(pg.query('SELECT count(*) FROM dorm_deploy_sim'), [['0']]);
  const left = pg.query("SELECT node_id FROM dorm_nodes").map((row) => row[0]);
  // The killed node of the kill row cannot deregister; it is the only one left.
  assert.equal(left.length, 1, String(left));
  assert.match(left[0], /-r1-n1-1$/);
});
