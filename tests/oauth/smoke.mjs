// Smoke test of the OAuth harness, no Rust involved: starts the provider with
// scripts/oidc-provider.sh, registers a native public client, runs the code
// flow with PKCE and a resource for alice through browser.mjs, checks and
// verifies the JWT access token, refreshes it, gets a token for another
// audience (bob, --no-follow style), a client credentials token, and checks
// refusals (unknown resource, wrong password, no PKCE).
//
//   bash scripts/oidc-provider.sh test     (installs oidc-provider if needed)
//   node --test tests/oauth/smoke.mjs      (once installed)
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { authorize } from './browser.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SCRIPT = path.join(HERE, '../../scripts/oidc-provider.sh');
const CACHE = process.env.MRTR_OIDC_CACHE || path.join(HERE, '../../.cache/oidc-provider');
const jose = await import(pathToFileURL(path.join(CACHE, 'node_modules/jose/dist/webapi/index.js')).href);

const RESOURCE = 'http://127.0.0.1:8808/mcp';
const OTHER = 'http://127.0.0.1:9909/other';
const TTL = 60;
const env = {
  ...process.env,
  MRTR_OIDC_RESOURCE: `${RESOURCE},${OTHER}`,
  MRTR_OIDC_AT_TTL: String(TTL),
  MRTR_OIDC_CLIENT_SECRET: 'smoke-secret',
};

let facts; // the lines `start` printed
let meta; // the discovery document
let jwks;
let listener; // the client's loopback redirect listener
const callbacks = [];
let client; // the dynamically registered client

before(async () => {
  const out = execFileSync('bash', [SCRIPT, 'start'], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  facts = Object.fromEntries(out.trim().split('\n').map((l) => l.split(/=(.*)/s).slice(0, 2)));
  listener = http.createServer((req, res) => {
    callbacks.push(new URL(req.url, 'http://127.0.0.1'));
    res.end('you may close this window');
  });
  await new Promise((resolve) => listener.listen(0, '127.0.0.1', resolve));
});

after(() => {
  listener?.close();
  if (facts?.MRTR_OIDC_PID) execFileSync('bash', [SCRIPT, 'stop', facts.MRTR_OIDC_PID], { stdio: 'inherit' });
});

const form = (o) => new URLSearchParams(Object.entries(o).filter(([, v]) => v !== undefined));
async function tokenRequest(params, auth) {
  const headers = { 'content-type': 'application/x-www-form-urlencoded' };
  if (auth) headers.authorization = `Basic ${Buffer.from(auth).toString('base64')}`;
  const res = await fetch(meta.token_endpoint, { method: 'POST', headers, body: form(params) });
  return { status: res.status, body: await res.json() };
}
async function verify(token, audience) {
  const { payload, protectedHeader } = await jose.jwtVerify(token, jwks, {
    issuer: facts.MRTR_OIDC_ISSUER, audience, typ: 'at+jwt',
  });
  assert.equal(payload.exp - payload.iat, TTL);
  return { payload, protectedHeader };
}
function pkce() {
  const verifier = crypto.randomBytes(32).toString('base64url');
  return { verifier, challenge: crypto.createHash('sha256').update(verifier).digest('base64url') };
}
function authUrl({ resource = RESOURCE, challenge, state, scope = 'mcp' }) {
  const url = new URL(meta.authorization_endpoint);
  url.search = form({
    response_type: 'code', client_id: client.client_id, redirect_uri: client.redirect,
    scope, state, resource, code_challenge: challenge, code_challenge_method: challenge && 'S256',
  });
  return url.href;
}

test('discovery', async () => {
  assert.match(facts.MRTR_OIDC_ISSUER, /^http:\/\/127\.0\.0\.1:\d+$/);
  meta = await (await fetch(`${facts.MRTR_OIDC_ISSUER}/.well-known/openid-configuration`)).json();
  assert.equal(meta.issuer, facts.MRTR_OIDC_ISSUER);
  for (const k of ['authorization_endpoint', 'token_endpoint', 'registration_endpoint', 'jwks_uri']) {
    assert.ok(meta[k]?.startsWith(meta.issuer), k);
  }
  assert.ok(meta.code_challenge_methods_supported.includes('S256'));
  jwks = jose.createRemoteJWKSet(new URL(meta.jwks_uri));
});

test('dynamic registration of a native public client', async () => {
  const res = await fetch(meta.registration_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'smoke', application_type: 'native', token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
      redirect_uris: ['http://127.0.0.1:1/callback'], // another port: loopback ports may differ
    }),
  });
  assert.equal(res.status, 201);
  client = await res.json();
  client.redirect = `http://127.0.0.1:${listener.address().port}/callback`;
  assert.ok(client.client_id);
  assert.equal(client.client_secret, undefined);
});

let refreshToken;
test('code flow with PKCE and resource for alice, JWT checks', async (t) => {
  const { verifier, challenge } = pkce();
  const state = crypto.randomUUID();
  const got = await authorize(authUrl({ challenge, state }), { user: 'alice' });
  const cb = callbacks.at(-1);
  assert.equal(cb.searchParams.get('code'), got.code);
  assert.equal(cb.searchParams.get('state'), state);
  assert.equal(cb.searchParams.get('iss'), facts.MRTR_OIDC_ISSUER);

  const { status, body } = await tokenRequest({
    grant_type: 'authorization_code', code: got.code, redirect_uri: client.redirect,
    client_id: client.client_id, code_verifier: verifier, resource: RESOURCE,
  });
  assert.equal(status, 200, JSON.stringify(body));
  assert.equal(body.token_type, 'Bearer');
  assert.ok(body.refresh_token, 'a refresh token without offline_access');
  const { payload, protectedHeader } = await verify(body.access_token, RESOURCE);
  assert.equal(payload.sub, 'alice');
  assert.equal(payload.scope, 'mcp');
  assert.equal(payload.client_id, client.client_id);
  t.diagnostic(`header ${JSON.stringify(protectedHeader)}`);
  t.diagnostic(`payload ${JSON.stringify(payload)}`);
  refreshToken = body.refresh_token;
});

test('refresh, with resource', async () => {
  const { status, body } = await tokenRequest({
    grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client.client_id, resource: RESOURCE,
  });
  assert.equal(status, 200, JSON.stringify(body));
  const { payload } = await verify(body.access_token, RESOURCE);
  assert.equal(payload.sub, 'alice');
  assert.ok(body.refresh_token && body.refresh_token !== refreshToken, 'rotated');
  // The grant was for RESOURCE only: OTHER is refused on refresh.
  const other = await tokenRequest({
    grant_type: 'refresh_token', refresh_token: body.refresh_token, client_id: client.client_id, resource: OTHER,
  });
  assert.equal(other.body.error, 'invalid_target');
});

test('a token for another audience, bob, --no-follow', async () => {
  const { verifier, challenge } = pkce();
  const before = callbacks.length;
  const got = await authorize(authUrl({ challenge, state: 's2', resource: OTHER, scope: 'mcp mcp:admin' }), { user: 'bob', follow: false });
  assert.equal(callbacks.length, before, 'the callback was not called');
  assert.equal(got.state, 's2');
  const { status, body } = await tokenRequest({
    grant_type: 'authorization_code', code: got.code, redirect_uri: client.redirect,
    client_id: client.client_id, code_verifier: verifier, resource: OTHER,
  });
  assert.equal(status, 200, JSON.stringify(body));
  const { payload } = await verify(body.access_token, OTHER);
  assert.equal(payload.sub, 'bob');
  assert.equal(payload.scope, 'mcp mcp:admin');
});

test('client credentials for mrtr-ci', async (t) => {
  const { status, body } = await tokenRequest(
    { grant_type: 'client_credentials', resource: RESOURCE, scope: 'mcp:admin' },
    'mrtr-ci:smoke-secret',
  );
  assert.equal(status, 200, JSON.stringify(body));
  const { payload } = await verify(body.access_token, RESOURCE);
  assert.equal(payload.sub, 'mrtr-ci');
  assert.equal(payload.scope, 'mcp:admin');
  t.diagnostic(`payload ${JSON.stringify(payload)}`);
  const bad = await tokenRequest({ grant_type: 'client_credentials', resource: RESOURCE }, 'mrtr-ci:wrong');
  assert.equal(bad.body.error, 'invalid_client');
});

test('refusals: unknown resource, wrong password, no PKCE', async () => {
  const unknown = await tokenRequest(
    { grant_type: 'client_credentials', resource: 'http://127.0.0.1:1/unknown' },
    'mrtr-ci:smoke-secret',
  );
  assert.equal(unknown.status, 400);
  assert.equal(unknown.body.error, 'invalid_target');
  const { challenge } = pkce();
  await assert.rejects(
    authorize(authUrl({ challenge, resource: 'http://127.0.0.1:1/unknown' }), { user: 'alice', follow: false }),
    /error=invalid_target/,
  );
  await assert.rejects(authorize(authUrl({ challenge }), { user: 'alice', password: 'nope' }), /login failed/);
  await assert.rejects(authorize(authUrl({}), { user: 'alice', follow: false }), /error=invalid_request: .*PKCE/);
});
