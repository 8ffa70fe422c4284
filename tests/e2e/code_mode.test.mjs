// Code mode end to end: the official SDK client against `dorm serve --code-mode --fixtures
// testing`. execute runs code against the tools; a tool that needs approval is approved
// inline (a client with elicitation) or pauses the execution (a client without), and a
// paused execution survives a SIGKILL: resume replays it and no tool runs twice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import { startServe, tempDir } from './lib/dorm_process.mjs';

// Debian's chromium, installed by tools/bootstrap.
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

const ARGS = ['--code-mode', '--fixtures', 'testing', '--engine-workers', '1', '--engine-slots', '2'];

async function connectClient(t, url, { sessionId, protocolVersion, capabilities, elicit, transportOptions = {} } = {}) {
  const transport = new StreamableHTTPClientTransport(url, { ...transportOptions, ...(sessionId ? { sessionId } : {}) });
  if (protocolVersion) transport.setProtocolVersion(protocolVersion);
  const client = new Client({ name: 'dorm-e2e-code', version: '1.0.0' }, capabilities ? { capabilities } : {});
  if (elicit) client.setRequestHandler(ElicitRequestSchema, elicit);
  await client.connect(transport);
  t.after(() => client.close());
  return { client, transport };
}

const textOf = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('');
const execute = (client, code) => client.callTool({ name: 'execute', arguments: { code } });
const resume = (client, executionId, action, content) =>
  client.callTool({ name: 'resume', arguments: { executionId, action, ...(content ? { content } : {}) } });

test('code mode: execute and resume are listed; code calls two tools with Promise.all', async (t) => {
  const { url } = await startServe(t, { extraArgs: ARGS });
  const { client } = await connectClient(t, url);
  const names = (await client.listTools()).tools.map((x) => x.name);
  assert.ok(names.includes('execute') && names.includes('resume'), names.join(','));

  const result = await execute(client, `
    const [a, b] = await Promise.all([tools.echo({ text: 'left' }), tools.add({ a: 2, b: 3 })]);
    console.log('got', a);
    return { a, sum: b.sum };`);
  assert.notEqual(result.isError, true, textOf(result));
  assert.deepEqual(result.structuredContent.result, { a: 'left', sum: 5 });
  assert.deepEqual(result.structuredContent.logs, ['[log] got left']);
  assert.match(textOf(result), /"sum": 5/);

  const failed = await execute(client, 'throw new Error("nope")');
  assert.equal(failed.isError, true);
  assert.match(textOf(failed), /^Error: .*nope/);
  const unknown = await execute(client, 'try { await tools.no_such_tool({}) } catch (e) { return e.message }');
  assert.match(textOf(unknown), /unknown tool: no_such_tool/);
  const found = await execute(client, 'return (await tools.search({ query: "counter" })).items.map((x) => x.path)');
  assert.ok(found.structuredContent.result.includes('counter_increment'), textOf(found));
  assert.ok(!found.structuredContent.result.includes('echo'), textOf(found));
  const described = await execute(client, 'return await tools.describe.tool({ path: "counter_increment" })');
  assert.equal(described.structuredContent.result.requiresApproval, true);
});

test('code mode: a client with elicitation approves a requires_approval tool inline', async (t) => {
  const { url } = await startServe(t, { extraArgs: ARGS });
  const asked = [];
  const { client } = await connectClient(t, url, {
    capabilities: { elicitation: {} },
    elicit: async (request) => { asked.push(request.params.message); return { action: asked.length === 1 ? 'accept' : 'decline' }; },
  });
  const approved = await execute(client, 'return await tools.counter_increment({})');
  assert.notEqual(approved.isError, true, textOf(approved));
  assert.equal(approved.structuredContent.result, 1);
  assert.equal(asked.length, 1);
  assert.match(asked[0], /counter_increment/);

  const declined = await execute(client, 'try { await tools.counter_increment({}); return "ran" } catch (e) { return e.message }');
  assert.match(declined.structuredContent.result, /declined tools\.counter_increment/);
  const count = await execute(client, 'return await tools.counter_get({})');
  assert.equal(count.structuredContent.result, 1);
});

test('code mode: a paused execution survives SIGKILL; resume replays it and every tool ran exactly once', async (t) => {
  const first = await startServe(t, { extraArgs: ARGS });
  t.after(() => { if (process.env.DEBUG_DORM) console.error(first.proc.stderr); });
  const { client, transport } = await connectClient(t, first.url);
  const paused = await execute(client, `
    const before = await tools.tally({});
    const after = await tools.counter_increment({});
    return after;`);
  assert.notEqual(paused.isError, true, textOf(paused));
  const s = paused.structuredContent;
  assert.equal(s.status, 'waiting_for_interaction');
  assert.match(s.executionId, /^exec_[0-9a-f-]{36}$/);
  assert.equal(s.interaction.address, 'counter_increment');
  assert.equal(s.ttlMs, 240000);
  assert.match(textOf(paused), /executionId: exec_/);
  assert.match(textOf(paused), /resumeDeadline: .*\(4 minutes approval window\)/);
  assert.match(textOf(paused), /instructions: /);

  // Stored as code mode's storage for later executions, before the kill.
  const put = await execute(client, 'await tools.storage.put({ key: "note", value: { kept: [1, 2] } }); return "ok"');
  assert.equal(put.structuredContent.result, 'ok');

  const sessionId = transport.sessionId;
  const protocolVersion = transport.protocolVersion;
  first.proc.kill('SIGKILL');
  await first.proc.waitForExit();
  const second = await startServe(t, { dataDir: first.dataDir, listen: `127.0.0.1:${first.port}`, extraArgs: ARGS });
  const again = await connectClient(t, second.url, { sessionId, protocolVersion });

  const done = await resume(again.client, s.executionId, 'accept');
  assert.notEqual(done.isError, true, textOf(done));
  assert.equal(done.structuredContent.status, 'completed');
  assert.equal(done.structuredContent.result, 1);
  // The approved side effect happened once, and the tool before the pause ran once across
  // the pause, the kill and the replay.
  const counts = await execute(again.client,
    'return [await tools.counter_get({}), await tools.counter_get({ name: "tally" })]');
  assert.deepEqual(counts.structuredContent.result, [1, 1]);
  // A second resume of the settled id answers the same outcome, and runs nothing.
  const repeat = await resume(again.client, s.executionId, 'accept');
  assert.equal(repeat.structuredContent.result, 1);
  const still = await execute(again.client, 'return await tools.counter_get({})');
  assert.equal(still.structuredContent.result, 1);
  // What the code stored before the kill is there after it.
  const read = await execute(again.client, 'return await tools.storage.get({ key: "note" })');
  assert.deepEqual(read.structuredContent.result, { kept: [1, 2] });

  const unknown = await resume(again.client, 'exec_00000000-0000-4000-8000-000000000000', 'accept');
  assert.equal(unknown.isError, true);
  // No owner on record: expired as far as anyone can tell (the original system's answer).
  assert.equal(unknown.structuredContent.status, 'execution_expired');
  assert.equal(unknown.structuredContent.ttlMs, 240000);
  assert.equal(unknown.structuredContent.recovery, 're_execute');
});

test('code mode: an approval nobody answers is declined with approval_timeout, and the code sees it', async (t) => {
  const { url, proc } = await startServe(t, { extraArgs: [...ARGS, '--approval-timeout', '2s'] });
  const { client } = await connectClient(t, url);
  const paused = await execute(client, `
    try { await tools.counter_increment({}); return "approved" } catch (e) { return "saw: " + e.message }`);
  const s = paused.structuredContent;
  assert.equal(s.status, 'waiting_for_interaction');
  assert.equal(s.ttlMs, 2000);
  // The alarm fires at the deadline and continues the execution with the decline. A resume
  // after that joins the continuation or answers its stored outcome: its accept is too late.
  await proc.waitForStderr(/mcp_pending_approval_lease_expire session=\S+ execution=exec_/);
  const outcome = await resume(client, s.executionId, 'accept');
  assert.equal(outcome.structuredContent.status, 'completed', textOf(outcome));
  assert.match(outcome.structuredContent.result, /^saw: .*declined tools\.counter_increment \(approval_timeout\)/);
  const count = await execute(client, 'return await tools.counter_get({})');
  assert.equal(count.structuredContent.result, 0);
});

test('code mode: resume from another session of the same user works through the directory; another user is forbidden', async (t) => {
  const tokens = join(tempDir(t), 'tokens.json');
  const sha = (s) => createHash('sha256').update(s).digest('hex');
  writeFileSync(tokens, JSON.stringify([
    { sha256: sha('alice-token'), user: 'alice', org: 'acme' },
    { sha256: sha('mallory-token'), user: 'mallory', org: 'acme' },
  ]));
  const { url } = await startServe(t, { extraArgs: [...ARGS, '--auth-tokens', tokens] });
  const as = (token) => ({ requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const owner = await connectClient(t, url, { transportOptions: as('alice-token') });
  const paused = await execute(owner.client, 'await tools.tally({}); return await tools.counter_increment({})');
  const id = paused.structuredContent.executionId;
  assert.ok(id, textOf(paused));

  const intruder = await connectClient(t, url, { transportOptions: as('mallory-token') });
  const forbidden = await resume(intruder.client, id, 'accept');
  assert.equal(forbidden.isError, true);
  assert.equal(forbidden.structuredContent.status, 'execution_forbidden');
  assert.equal(forbidden.structuredContent.recovery, undefined);

  const other = await connectClient(t, url, { transportOptions: as('alice-token') });
  assert.notEqual(other.transport.sessionId, owner.transport.sessionId);
  const done = await resume(other.client, id, 'accept');
  assert.notEqual(done.isError, true, textOf(done));
  assert.equal(done.structuredContent.result, 1);
  // Settled: the owner's own resume answers the same outcome; the tool ran once.
  const again = await resume(owner.client, id, 'accept');
  assert.equal(again.structuredContent.result, 1);
  const count = await execute(owner.client, 'return await tools.counter_get({})');
  assert.equal(count.structuredContent.result, 1);
});

test('code mode: the approval page takes the owner\'s bearer token instead of the link; another user\'s or an unknown token is refused', async (t) => {
  const tokens = join(tempDir(t), 'tokens.json');
  const sha = (s) => createHash('sha256').update(s).digest('hex');
  writeFileSync(tokens, JSON.stringify([
    { sha256: sha('alice-token'), user: 'alice', org: 'acme' },
    { sha256: sha('mallory-token'), user: 'mallory', org: 'acme' },
  ]));
  const { url } = await startServe(t, { extraArgs: [...ARGS, '--auth-tokens', tokens] });
  const bearer = (token) => ({ Authorization: `Bearer ${token}` });
  const owner = await connectClient(t, url, { transportOptions: { requestInit: { headers: bearer('alice-token') } } });
  const paused = await execute(owner.client, 'await tools.tally({}); return await tools.counter_increment({})');
  const s = paused.structuredContent;
  assert.equal(s.status, 'waiting_for_interaction', textOf(paused));
  const page = new URL(`/approve/${s.executionId}`, url);
  const post = (headers, action) => fetch(page, {
    method: 'POST',
    headers: { ...headers, 'Content-Type': 'application/x-www-form-urlencoded' },
    body: `action=${action}`,
  });

  // Refusals change nothing: an unknown token, a malformed header, another user.
  const unknown = await fetch(page, { headers: bearer('nobody-token') });
  assert.equal(unknown.status, 401);
  assert.equal(unknown.headers.get('www-authenticate'), 'Bearer');
  assert.match(await unknown.text(), /bearer token is not valid/);
  const malformed = await post({ Authorization: 'Basic YWxpY2U6eA==' }, 'accept');
  assert.equal(malformed.status, 401);
  const intruder = await post(bearer('mallory-token'), 'accept');
  assert.equal(intruder.status, 403);
  assert.match(await intruder.text(), /belongs to another user/);

  // The owner's token shows the call (no one-time token in the form) and approves it.
  const shown = await fetch(page, { headers: bearer('alice-token') });
  assert.equal(shown.status, 200);
  const html = await shown.text();
  assert.match(html, /counter_increment/);
  assert.doesNotMatch(html, /name="token"/);
  const approved = await post(bearer('alice-token'), 'accept');
  assert.equal(approved.status, 200);
  assert.match(await approved.text(), /Approved/);

  const done = await resume(owner.client, s.executionId, 'accept');
  assert.equal(done.structuredContent.status, 'completed', textOf(done));
  assert.equal(done.structuredContent.result, 1);
  const count = await execute(owner.client, 'return await tools.counter_get({})');
  assert.equal(count.structuredContent.result, 1);
  // Answered: neither the owner's token nor the link can answer it again.
  assert.equal((await post(bearer('alice-token'), 'decline')).status, 404);
  assert.equal((await fetch(s.approvalUrl)).status, 404);
});

test('code mode: the approval page approves in headless Chromium; a wrong or reused token is refused', async (t) => {
  const { url } = await startServe(t, { extraArgs: ARGS });
  const { client } = await connectClient(t, url);
  const paused = await execute(client, 'await tools.tally({}); return await tools.counter_increment({})');
  const s = paused.structuredContent;
  assert.equal(s.status, 'waiting_for_interaction', textOf(paused));
  const link = new URL(s.approvalUrl);
  assert.equal(link.origin, url.origin);
  assert.equal(link.pathname, `/approve/${s.executionId}`);
  assert.match(textOf(paused), /approvalUrl: http:\/\//);

  // A wrong token is refused and changes nothing.
  const wrong = new URL(link);
  wrong.searchParams.set('token', '0'.repeat(32));
  const refused = await fetch(wrong);
  assert.equal(refused.status, 403);
  assert.match(await refused.text(), /not valid/);

  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  t.after(() => browser.close());
  const page = await browser.newPage();
  const shown = await page.goto(link.href, { waitUntil: 'load', timeout: 20_000 });
  assert.equal(shown.status(), 200);
  const text = await page.$eval('body', (b) => b.innerText);
  assert.match(text, /counter_increment/);
  await Promise.all([
    page.waitForNavigation({ waitUntil: 'load', timeout: 20_000 }),
    page.click('button[value="accept"]'),
  ]);
  assert.match(await page.$eval('body', (b) => b.innerText), /Approved/);

  // The approval continued the execution: resume answers its outcome, and the tool ran once.
  const done = await resume(client, s.executionId, 'accept');
  assert.equal(done.structuredContent.status, 'completed', textOf(done));
  assert.equal(done.structuredContent.result, 1);
  const count = await execute(client, 'return await tools.counter_get({})');
  assert.equal(count.structuredContent.result, 1);
  // The link was single use.
  const reused = await fetch(link);
  assert.equal(reused.status, 404);
});
