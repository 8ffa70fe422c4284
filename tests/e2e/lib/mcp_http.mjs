// A raw Streamable HTTP client for transport tests: plain fetch, every wait bounded, no
// SDK in between, so each status and header the server sends is visible.
import { WAIT_MS } from './dorm_process.mjs';

export const ACCEPT_BOTH = 'application/json, text/event-stream';

// POSTs `body` (an object is JSON-encoded) to the endpoint. Options: session, token,
// version (MCP-Protocol-Version), headers (extra or overriding).
export async function post(url, body, { session, token, version, headers = {} } = {}) {
  const h = { 'content-type': 'application/json', accept: ACCEPT_BOTH };
  if (session) h['mcp-session-id'] = session;
  if (token) h.authorization = `Bearer ${token}`;
  if (version) h['mcp-protocol-version'] = version;
  Object.assign(h, headers);
  const res = await fetch(url, {
    method: 'POST',
    headers: h,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(WAIT_MS),
  });
  return { res, text: await res.text() };
}

export async function request(url, method, { session, token, headers = {} } = {}) {
  const h = { accept: 'text/event-stream' };
  if (session) h['mcp-session-id'] = session;
  if (token) h.authorization = `Bearer ${token}`;
  Object.assign(h, headers);
  const res = await fetch(url, { method, headers: h, signal: AbortSignal.timeout(WAIT_MS) });
  return { res, text: await res.text() };
}

// The JSON-RPC messages carried by an SSE body (events with data).
export function sseMessages(text) {
  const out = [];
  for (const block of text.split('\n\n')) {
    const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart());
    if (data.length && data.join('') !== '') out.push(JSON.parse(data.join('\n')));
  }
  return out;
}

export const initializeBody = (id = 1, protocolVersion = '2025-11-25') => ({
  jsonrpc: '2.0', id, method: 'initialize',
  params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw-test', version: '1' } },
});

// initialize + notifications/initialized; returns the session id.
export async function openSession(url, opts = {}) {
  const { res, text } = await post(url, initializeBody(1, opts.protocolVersion), opts);
  if (res.status !== 200) throw new Error(`initialize: ${res.status} ${text}`);
  const session = res.headers.get('mcp-session-id');
  const note = await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { ...opts, session });
  if (note.res.status !== 202) throw new Error(`initialized: ${note.res.status} ${note.text}`);
  return session;
}
