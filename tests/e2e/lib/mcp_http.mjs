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

// An SSE response read as it arrives: `events` fills with {id, retry, data, message}
// (message: the parsed JSON-RPC message, null for empty data), `comments` counts comment
// lines; `until(pred)` waits (bounded) for an event matching pred; `ended` resolves when
// the body ends (true) or fails (false). close() aborts the request.
export class SseStream {
  constructor(res, controller) {
    this.res = res;
    this.controller = controller;
    this.events = [];
    this.comments = 0;
    this.bytes = 0;
    this.waiters = [];
    this.ended = this.#pump();
  }

  async #pump() {
    const reader = this.res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        this.bytes += value.length;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          this.#take(buffer.slice(0, cut));
          buffer = buffer.slice(cut + 2);
        }
      }
      return true;
    } catch {
      return false;
    } finally {
      this.done = true;
      for (const w of this.waiters) w();
    }
  }

  #take(block) {
    const event = { id: undefined, retry: undefined, data: [] };
    let comment = false;
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) comment = true;
      else if (line.startsWith('id:')) event.id = line.slice(3).trimStart();
      else if (line.startsWith('retry:')) event.retry = Number(line.slice(6).trim());
      else if (line.startsWith('data:')) event.data.push(line.slice(5).replace(/^ /, ''));
    }
    if (comment && event.id === undefined && event.data.length === 0) {
      this.comments += 1;
      return;
    }
    const data = event.data.join('\n');
    this.events.push({ id: event.id, retry: event.retry, data, message: data === '' ? null : JSON.parse(data) });
    for (const w of this.waiters) w();
  }

  messages() { return this.events.filter((e) => e.message).map((e) => e.message); }

  // Resolves with the first event matching pred (or once the stream ended: undefined).
  async until(pred, ms = WAIT_MS) {
    let timer;
    const found = new Promise((resolve) => {
      const check = () => {
        const e = this.events.find(pred);
        if (e || this.done) resolve(e);
      };
      this.waiters.push(check);
      check();
    });
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no matching SSE event within ${ms} ms`)), ms);
    });
    return Promise.race([found, timeout]).finally(() => clearTimeout(timer));
  }

  close() { this.controller.abort(); }
}

// Sends a request whose SSE response is read as it arrives (see SseStream). Options as
// for post() and request(), plus body (for POST) and lastEventId.
export async function openStream(url, method, { session, token, version, headers = {}, body, lastEventId } = {}) {
  const h = { accept: method === 'POST' ? ACCEPT_BOTH : 'text/event-stream' };
  if (body !== undefined) h['content-type'] = 'application/json';
  if (session) h['mcp-session-id'] = session;
  if (token) h.authorization = `Bearer ${token}`;
  if (version) h['mcp-protocol-version'] = version;
  if (lastEventId) h['last-event-id'] = lastEventId;
  Object.assign(h, headers);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), WAIT_MS);
  const res = await fetch(url, {
    method, headers: h, signal: controller.signal,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  clearTimeout(timer);
  return new SseStream(res, controller);
}
