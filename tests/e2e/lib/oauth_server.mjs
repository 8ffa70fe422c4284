// A real OAuth authorization server for the tests: `oidc-provider` (pinned in
// package.json) on 127.0.0.1 at a port chosen at run time, with clients registered for the
// client-credentials grant and resource indicators (RFC 8707) on, so the tokens it issues
// are JWT access tokens (RFC 9068) whose `aud` is the resource the client asked for.
//
// With `tls` ({key, cert}, e.g. from lib/test_ca.mjs) it serves https:// instead.
//
// rotate() replaces the signing key (a new `kid`, and another algorithm) the way a real AS
// rotates: a new provider with the same issuer takes over the same listener.
import http from 'node:http';
import https from 'node:https';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import Provider from 'oidc-provider';
import { SignJWT, importJWK } from 'jose';

export const CLIENTS = [
  { id: 'dorm-e2e', secret: 'e2e-secret-one' },
  { id: 'dorm-e2e-other', secret: 'e2e-secret-two' },
];
// dorm's own client, with which it introspects opaque tokens (RFC 7662).
export const RESOURCE_SERVER_CLIENT = { id: 'dorm-rs', secret: 'rs-secret' };

// A private signing JWK: ES256 (P-256) or RS256 (RSA 2048).
export function signingKey(alg) {
  const { privateKey } = alg === 'ES256'
    ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
    : generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: `${alg}-${randomUUID()}`, alg, use: 'sig' };
}

function configuration(key, format) {
  return {
    clients: [...CLIENTS, RESOURCE_SERVER_CLIENT].map((c) => ({
      client_id: c.id,
      client_secret: c.secret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      // The provider refuses a client whose ID-token algorithm it has no key for.
      id_token_signed_response_alg: key.alg,
    })),
    jwks: { keys: [key] },
    scopes: ['mcp', 'other'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // Whatever resource the client names becomes the audience: the tests ask for
        // dorm's URI and for another server's.
        getResourceServerInfo: () => ({
          scope: 'mcp other',
          accessTokenTTL: 300,
          accessTokenFormat: format,
          jwt: { sign: { alg: key.alg } },
        }),
      },
    },
  };
}

export class AuthorizationServer {
  // Starts listening on 127.0.0.1 with a fresh ES256 key; over TLS with `tls`. Its access
  // tokens are JWTs, or with format 'opaque' random strings only its introspection
  // endpoint (`introspectionUrl`) can tell about.
  static async start(t, { tls, format = 'jwt' } = {}) {
    const as = new AuthorizationServer();
    as.format = format;
    const handle = (req, res) => as.handler(req, res);
    as.server = tls ? https.createServer(tls, handle) : http.createServer(handle);
    await new Promise((resolve, reject) => {
      as.server.once('error', reject);
      as.server.listen(0, '127.0.0.1', resolve);
    });
    as.issuer = `${tls ? 'https' : 'http'}://127.0.0.1:${as.server.address().port}`;
    as.use(signingKey('ES256'));
    t.after(() => new Promise((resolve) => {
      as.server.closeAllConnections();
      as.server.close(resolve);
    }));
    return as;
  }

  use(key) {
    this.key = key;
    this.provider = new Provider(this.issuer, configuration(key, this.format));
    this.introspectionUrl = `${this.issuer}/token/introspection`;
    this.handler = this.provider.callback();
  }

  // A new signing key (another kid, and RS256 after ES256); the old one is gone from the JWKS.
  rotate() {
    this.use(signingKey(this.key.alg === 'ES256' ? 'RS256' : 'ES256'));
  }

  // An access token by the client-credentials grant for `resource`, or the error.
  async token({ resource, scope = 'mcp', client = CLIENTS[0] }) {
    const res = await fetch(`${this.issuer}/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource }).toString(),
      signal: AbortSignal.timeout(10_000),
    });
    const body = await res.json();
    if (res.status !== 200) throw new Error(`token endpoint: ${res.status} ${JSON.stringify(body)}`);
    return body.access_token;
  }

  // Revokes a token the client got (RFC 7009).
  async revoke(token, client = CLIENTS[0]) {
    const res = await fetch(`${this.issuer}/token/revocation`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ token }).toString(),
      signal: AbortSignal.timeout(10_000),
    });
    if (res.status !== 200) throw new Error(`revocation endpoint: ${res.status} ${await res.text()}`);
  }

  // A token signed with the AS's current key but with the claims given (e.g. expired).
  async forge(claims, { key = this.key } = {}) {
    const signer = await importJWK(key, key.alg);
    return new SignJWT(claims)
      .setProtectedHeader({ alg: key.alg, typ: 'at+jwt', kid: key.kid })
      .sign(signer);
  }
}

// The parts of a JWT, decoded (no verification): for checking what the AS issued.
export function decodeJwt(token) {
  const [header, payload] = token.split('.').slice(0, 2)
    .map((p) => JSON.parse(Buffer.from(p, 'base64url').toString('utf8')));
  return { header, payload };
}
