// `dorm serve --auth oauth` against a real authorization server (oidc-provider, see
// lib/oauth_server.mjs): the official SDK client with a client-credentials token for dorm's
// URI, every kind of bad token refused with the right status and no session made, the
// Protected Resource Metadata, and a key rotation at the AS picked up without a restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DormProcess, startServe, tempDir } from './lib/dorm_process.mjs';
import { post, initializeBody, openSession } from './lib/mcp_http.mjs';
import { writeFileSync } from 'node:fs';
import {
  AuthorizationServer, CLIENTS, RESOURCE_SERVER_CLIENT, decodeJwt, signingKey,
} from './lib/oauth_server.mjs';
import { TestCa } from './lib/test_ca.mjs';

// Every unknown kid may fetch the JWKS again: the rotation below must not wait out an
// interval (the interval itself is covered by the unit tests, on a virtual clock).
async function startOAuthServe(t, as, extra = []) {
  const dataDir = tempDir(t);
  const served = await startServe(t, {
    dataDir,
    extraArgs: ['--fixtures', 'testing', '--auth', 'oauth', '--oauth-issuer', as.issuer,
      '--oauth-scopes', 'mcp', '--oauth-min-key-refresh', '0', ...extra],
  });
  return { ...served, storage: `rocksdb:${join(dataDir, 'data')}` };
}

async function sdkClient(t, url, token) {
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'dorm-oauth-e2e', version: '1.0.0' });
  await client.connect(transport);
  t.after(() => client.close());
  return { client, transport };
}

async function sessionsInStore(t, storage) {
  const proc = new DormProcess(t, ['inspect', '--storage', storage, '--json']);
  let stdout = '';
  proc.child.stdout.on('data', (c) => { stdout += c; });
  const { code } = await proc.waitForExit();
  assert.equal(code, 0, proc.stderr);
  return JSON.parse(stdout).sessions.total;
}

const challenge = (res) => res.headers.get('www-authenticate') ?? '';

test('oauth: the SDK client with a client-credentials token for dorm initializes and calls a tool', async (t) => {
  const as = await AuthorizationServer.start(t);
  const { url } = await startOAuthServe(t, as);
  const token = await as.token({ resource: url.href });
  assert.equal(decodeJwt(token).payload.aud, url.href);

  const { client, transport } = await sdkClient(t, url, token);
  assert.ok(transport.sessionId);
  const result = await client.callTool({ name: 'echo', arguments: { text: 'hello oauth' } });
  assert.equal(result.content[0].text, 'hello oauth');

  // The session belongs to the token's principal (iss + sub): another client of the same
  // AS, with a valid token of its own, is told the session does not exist.
  const other = await as.token({ resource: url.href, client: CLIENTS[1] });
  const foreign = await post(url, { jsonrpc: '2.0', id: 5, method: 'tools/list' },
    { session: transport.sessionId, token: other, version: '2025-11-25' });
  assert.equal(foreign.res.status, 404, foreign.text);
});

test('oauth: the approval page takes the owner\'s access token; another principal\'s valid token is refused', async (t) => {
  const as = await AuthorizationServer.start(t);
  const { url } = await startOAuthServe(t, as, ['--code-mode', '--engine-workers', '1', '--engine-slots', '2']);
  const token = await as.token({ resource: url.href });
  const { client } = await sdkClient(t, url, token);
  const paused = await client.callTool({ name: 'execute', arguments: { code: 'return await tools.counter_increment({})' } });
  const s = paused.structuredContent;
  assert.equal(s.status, 'waiting_for_interaction', JSON.stringify(paused));
  const page = new URL(`/approve/${s.executionId}`, url);
  const approve = (bearer) => fetch(page, {
    method: 'POST',
    headers: { Authorization: `Bearer ${bearer}`, 'Content-Type': 'application/x-www-form-urlencoded' },
    body: 'action=accept',
  });

  // Another client of the same AS: a valid token, another principal. Nothing changes.
  const other = await as.token({ resource: url.href, client: CLIENTS[1] });
  const intruder = await approve(other);
  assert.equal(intruder.status, 403, await intruder.text());
  const bad = await approve('not-a-jwt');
  assert.equal(bad.status, 401);

  const approved = await approve(token);
  assert.equal(approved.status, 200, await approved.text());
  const done = await client.callTool({ name: 'resume', arguments: { executionId: s.executionId, action: 'accept' } });
  assert.equal(done.structuredContent.status, 'completed', JSON.stringify(done));
  assert.equal(done.structuredContent.result, 1);
});

test('oauth: Protected Resource Metadata, and the 401 that points at it', async (t) => {
  const as = await AuthorizationServer.start(t);
  const { url } = await startOAuthServe(t, as);
  const metadataUrl = `${url.origin}/.well-known/oauth-protected-resource/mcp`;
  for (const where of [metadataUrl, `${url.origin}/.well-known/oauth-protected-resource`]) {
    const res = await fetch(where, { signal: AbortSignal.timeout(10_000) });
    assert.equal(res.status, 200, where);
    assert.deepEqual(await res.json(), {
      resource: url.href,
      authorization_servers: [as.issuer],
      scopes_supported: ['mcp'],
      bearer_methods_supported: ['header'],
      resource_name: 'dorm',
    });
  }
  const elsewhere = await fetch(`${url.origin}/.well-known/oauth-protected-resource/other`);
  assert.equal(elsewhere.status, 404);

  const none = await post(url, initializeBody());
  assert.equal(none.res.status, 401);
  assert.equal(challenge(none.res), `Bearer resource_metadata="${metadataUrl}"`);

  // A token in the query string is refused, even a good one.
  const token = await as.token({ resource: url.href });
  const inQuery = await post(new URL(`?access_token=${token}`, url), initializeBody());
  assert.equal(inQuery.res.status, 400);
  assert.match(challenge(inQuery.res), /error="invalid_request"/);
});

test('oauth: bad tokens get 401 or 403 and create no session', async (t) => {
  const as = await AuthorizationServer.start(t);
  const { url, storage } = await startOAuthServe(t, as);
  const metadataUrl = `${url.origin}/.well-known/oauth-protected-resource/mcp`;
  const now = Math.floor(Date.now() / 1000);
  const good = { iss: as.issuer, sub: 'dorm-e2e', aud: url.href, scope: 'mcp', client_id: 'dorm-e2e' };

  const stranger = signingKey('ES256');
  const noneHeader = Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt', kid: as.key.kid })).toString('base64url');
  const cases = [
    ['another audience', await as.token({ resource: 'http://127.0.0.1:9/elsewhere/mcp' }), 401],
    ['expired', await as.forge({ ...good, iat: now - 900, exp: now - 600 }), 401],
    ['signed by a key the AS does not have', await as.forge({ ...good, iat: now, exp: now + 300 }, { key: stranger }), 401],
    ['alg none', `${noneHeader}.${Buffer.from(JSON.stringify({ ...good, exp: now + 300 })).toString('base64url')}.`, 401],
    ['not a JWT', 'opaque-token-value', 401],
    ['missing the mcp scope', await as.token({ resource: url.href, scope: 'other' }), 403],
  ];
  for (const [what, token, status] of cases) {
    const { res, text } = await post(url, initializeBody(), { token });
    assert.equal(res.status, status, `${what}: ${text}`);
    assert.equal(res.headers.get('mcp-session-id'), null, what);
    const expected = status === 403
      ? `Bearer error="insufficient_scope", scope="mcp", resource_metadata="${metadataUrl}"`
      : `Bearer resource_metadata="${metadataUrl}", error="invalid_token"`;
    assert.ok(challenge(res).startsWith(expected), `${what}: ${challenge(res)}`);
  }

  // One good initialize, so the count below is known to see sessions at all.
  await openSession(url, { token: await as.token({ resource: url.href }) });
  assert.equal(await sessionsInStore(t, storage), 1);
});

test('oauth: a key rotation at the AS is picked up without a restart', async (t) => {
  const as = await AuthorizationServer.start(t);
  const { url } = await startOAuthServe(t, as);
  const before = await as.token({ resource: url.href });
  await openSession(url, { token: before });

  as.rotate();
  const after = await as.token({ resource: url.href });
  assert.notEqual(decodeJwt(after).header.kid, decodeJwt(before).header.kid);
  assert.equal(decodeJwt(after).header.alg, 'RS256');
  const { client } = await sdkClient(t, url, after);
  const result = await client.callTool({ name: 'echo', arguments: { text: 'after rotation' } });
  assert.equal(result.content[0].text, 'after rotation');

  // The old key left the AS's JWKS, and so dorm's cache.
  const stale = await post(url, initializeBody(), { token: before });
  assert.equal(stale.res.status, 401, stale.text);
});

test('oauth: --auth none is refused off loopback, and --auth oauth needs an issuer', async (t) => {
  for (const args of [['--auth', 'none', '--listen', '0.0.0.0:0'], ['--auth', 'oauth']]) {
    const proc = new DormProcess(t, ['serve', '--storage', 'memory:', ...args]);
    const { code } = await proc.waitForExit();
    assert.equal(code, 1, args.join(' '));
    assert.match(proc.stderr, /refusing_to_listen|bad_auth_options/);
  }
});

test('oauth: two authorization servers — tokens of each work, and the same sub from each is someone else', async (t) => {
  const first = await AuthorizationServer.start(t);
  const second = await AuthorizationServer.start(t);
  const { url } = await startOAuthServe(t, first, ['--oauth-issuer', second.issuer]);
  const metadata = await (await fetch(`${url.origin}/.well-known/oauth-protected-resource/mcp`)).json();
  assert.deepEqual(metadata.authorization_servers, [first.issuer, second.issuer]);

  const one = await first.token({ resource: url.href });
  const two = await second.token({ resource: url.href });
  assert.equal(decodeJwt(one).payload.sub, decodeJwt(two).payload.sub);  // the same client id at both
  const { client, transport } = await sdkClient(t, url, one);
  assert.equal((await client.callTool({ name: 'echo', arguments: { text: 'first' } })).content[0].text, 'first');
  const { client: other } = await sdkClient(t, url, two);
  assert.equal((await other.callTool({ name: 'echo', arguments: { text: 'second' } })).content[0].text, 'second');

  // The principal is iss + sub: the second AS's token does not open the first one's session.
  const foreign = await post(url, { jsonrpc: '2.0', id: 7, method: 'tools/list' },
    { session: transport.sessionId, token: two, version: '2025-11-25' });
  assert.equal(foreign.res.status, 404, foreign.text);
});

test('oauth: keys over https are trusted through --oauth-ca-file; an unknown CA or a certificate for another host is not', async (t) => {
  const ca = new TestCa(tempDir(t));
  const as = await AuthorizationServer.start(t, { tls: ca.issue('as', ['IP:127.0.0.1']) });
  const elsewhere = await AuthorizationServer.start(t, { tls: ca.issue('elsewhere', ['DNS:as.example']) });
  assert.match(as.issuer, /^https:\/\/127\.0\.0\.1:/);
  const now = Math.floor(Date.now() / 1000);
  const tokenFor = (server, url) => server.forge({
    iss: server.issuer, sub: 'svc', aud: url.href, scope: 'mcp', iat: now, exp: now + 300,
  });

  const trusted = await startOAuthServe(t, as, ['--oauth-ca-file', ca.certFile]);
  const ok = await post(trusted.url, initializeBody(), { token: await tokenFor(as, trusted.url) });
  assert.equal(ok.res.status, 200, ok.text);
  assert.ok(ok.res.headers.get('mcp-session-id'));
  await trusted.proc.waitForStderr(/oauth_keys_loaded/);

  // The system's trust store does not know the test CA: no keys, so 503 and the reason logged.
  const untrusted = await startOAuthServe(t, as);
  const refused = await post(untrusted.url, initializeBody(), { token: await tokenFor(as, untrusted.url) });
  assert.equal(refused.res.status, 503, refused.text);
  await untrusted.proc.waitForStderr(/oauth_keys_unavailable.*certificate verify failed/);

  // A certificate of the right CA that names another host.
  const misnamed = await startOAuthServe(t, elsewhere, ['--oauth-ca-file', ca.certFile]);
  const wrongHost = await post(misnamed.url, initializeBody(), { token: await tokenFor(elsewhere, misnamed.url) });
  assert.equal(wrongHost.res.status, 503, wrongHost.text);
  await misnamed.proc.waitForStderr(/oauth_keys_unavailable.*certificate verify failed/);
});

test('oauth: opaque tokens are introspected at the AS (RFC 7662): accepted, another audience, unscoped, made up', async (t) => {
  const as = await AuthorizationServer.start(t, { format: 'opaque' });
  const secretFile = join(tempDir(t), 'rs-secret');
  writeFileSync(secretFile, `${RESOURCE_SERVER_CLIENT.secret}\n`);
  const { url, storage } = await startOAuthServe(t, as, ['--oauth-introspection-url', as.introspectionUrl,
    '--oauth-client-id', RESOURCE_SERVER_CLIENT.id, '--oauth-client-secret-file', secretFile]);
  const token = await as.token({ resource: url.href });
  assert.equal(token.split('.').length, 1, 'an opaque token, not a JWT');

  const { client, transport } = await sdkClient(t, url, token);
  assert.equal((await client.callTool({ name: 'echo', arguments: { text: 'opaque' } })).content[0].text, 'opaque');
  // The principal: the client acting for itself (client credentials carry no sub), of this AS.
  const other = await as.token({ resource: url.href, client: CLIENTS[1] });
  const foreign = await post(url, { jsonrpc: '2.0', id: 9, method: 'tools/list' },
    { session: transport.sessionId, token: other, version: '2025-11-25' });
  assert.equal(foreign.res.status, 404, foreign.text);

  const sessionsBefore = await sessionsInStore(t, storage);
  const cases = [
    ['made up', 'definitely-not-a-token', 401],
    ['for another server', await as.token({ resource: 'http://127.0.0.1:9/elsewhere/mcp' }), 401],
    ['missing the mcp scope', await as.token({ resource: url.href, scope: 'other' }), 403],
  ];
  for (const [what, bad, status] of cases) {
    const { res, text } = await post(url, initializeBody(), { token: bad });
    assert.equal(res.status, status, `${what}: ${text}`);
    assert.equal(res.headers.get('mcp-session-id'), null, what);
  }
  assert.equal(await sessionsInStore(t, storage), sessionsBefore);
});

test('oauth: without an introspection endpoint an opaque token is refused', async (t) => {
  const as = await AuthorizationServer.start(t, { format: 'opaque' });
  const { url } = await startOAuthServe(t, as);
  const { res, text } = await post(url, initializeBody(), { token: await as.token({ resource: url.href }) });
  assert.equal(res.status, 401, text);
});

test('oauth: a token revoked at the AS is refused once the remembered answer is older than the TTL', async (t) => {
  const as = await AuthorizationServer.start(t, { format: 'opaque' });
  const secretFile = join(tempDir(t), 'rs-secret');
  writeFileSync(secretFile, RESOURCE_SERVER_CLIENT.secret);
  const { url } = await startOAuthServe(t, as, ['--oauth-introspection-url', as.introspectionUrl,
    '--oauth-client-id', RESOURCE_SERVER_CLIENT.id, '--oauth-client-secret-file', secretFile,
    '--oauth-introspection-cache-ttl', '0']);
  const token = await as.token({ resource: url.href });
  const session = await openSession(url, { token });
  await as.revoke(token);
  const after = await post(url, { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    { session, token, version: '2025-11-25' });
  assert.equal(after.res.status, 401, after.text);
  assert.match(challenge(after.res), /error="invalid_token"/);
});
