// `mrtr call` against hostile MCP servers, with a real authorization server
// nobody here wrote (node-oidc-provider, tests/oauth/provider.mjs) as the
// honest one. Each test replays one finding of the security review
// (shared/review/security-turn4.md) and shows the attacker gets nothing:
//
// - N1, mix-up: the hostile server names its own "authorization server", whose
//   authorization endpoint sends the browser to the honest provider with the
//   attacker's client id but mrtr's state, PKCE challenge and callback. The
//   provider redirects back with iss=<honest>; mrtr must refuse the code and
//   send nothing (no code, no verifier) to the hostile token endpoint.
// - N2: discovered URLs that point at another port of this machine (GETs with a
//   chosen path and query, a JSON POST to a "registration endpoint") are never
//   requested.
// - N4: a client secret goes only to the issuer named with --oauth-issuer.
// - N5: no OAuth, and no -H/--bearer-env without --insecure-http, over plain
//   http to a host that is not loopback (0x7f000001 resolves to 127.0.0.1 but
//   is a remote name to mrtr).
// - N10: a login whose metadata names the server's origin as its resource is
//   found again on the next call, and --logout removes it.
//
//   bash scripts/oauth-e2e.sh            (builds nothing: run after cargo test's build)
//   node --test tests/oauth/hostile.mjs  (MRTR_BIN: the binary)
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { authorize } from './browser.mjs';
import { mrtrCall as runCall } from './call.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.join(HERE, '../..');
const SCRIPT = path.join(REPO, 'scripts/oidc-provider.sh');
const MRTR = process.env.MRTR_BIN || path.join(REPO, 'target/debug/mrtr');

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mrtr-oauth-hostile-'));
const children = [];
const servers = [];
let facts; // what scripts/oidc-provider.sh start printed
let honestUrl; // mrtr serve behind the honest provider, audience = its /mcp URL
let originUrl; // mrtr serve whose audience (and metadata resource) is its origin

async function freePort() {
  const s = net.createServer();
  await new Promise((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return port;
}

/** Starts `mrtr serve ARGS` and resolves once it listens. */
function serve(args) {
  const child = spawn(MRTR, ['serve', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`mrtr serve did not start:\n${seen}`)), 60_000);
    child.stderr.setEncoding('utf8').on('data', (chunk) => {
      seen += chunk;
      const m = seen.match(/listening on (http:\/\/[0-9.:]+\/mcp)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on('exit', (code) => reject(new Error(`mrtr serve exited (${code}):\n${seen}`)));
  });
}

/** `mrtr call ARGS`; a printed login URL is handed to `browser`. */
function mrtrCall(args, { browser, env = {}, cache = 'tokens.json' } = {}) {
  return runCall(MRTR, args, { tokenCache: path.join(work, cache), children, browser, env });
}

/**
 * A plain HTTP server on a loopback port that records every request and
 * answers with `routes[METHOD path]` (a function of the request, its URL and
 * body, returning { status, headers, body }), else 404.
 */
async function recorder(routes = {}) {
  const seen = [];
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const url = new URL(req.url, 'http://x');
    seen.push({ method: req.method, path: url.pathname, search: url.search, headers: req.headers, body });
    const route = routes[`${req.method} ${url.pathname}`];
    const out = route ? await route(req, url, body) : { status: 404 };
    const headers = { ...(out.headers ?? {}) };
    let payload = out.body ?? '';
    if (typeof payload !== 'string') {
      payload = JSON.stringify(payload);
      headers['content-type'] = 'application/json';
    }
    res.writeHead(out.status ?? 200, headers);
    res.end(payload);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { seen, origin: `http://127.0.0.1:${server.address().port}`, port: server.address().port };
}

/**
 * A hostile MCP server at `${origin}/mcp`: 401 with its metadata, which names
 * `authorizationServers` (default: itself), and an authorization server of its
 * own whose metadata `asMetadata(origin)` may change.
 */
async function hostileServer({ authorizationServers, asMetadata, authorize: onAuthorize, resource } = {}) {
  const routes = {};
  const evil = await recorder(routes);
  const o = evil.origin;
  const prm = {
    resource: resource ?? `${o}/mcp`,
    authorization_servers: authorizationServers ?? [o],
  };
  routes['POST /mcp'] = () => ({
    status: 401,
    headers: { 'www-authenticate': `Bearer resource_metadata="${o}/.well-known/oauth-protected-resource/mcp"` },
  });
  routes['GET /.well-known/oauth-protected-resource/mcp'] = () => ({ body: prm });
  routes['GET /.well-known/oauth-authorization-server'] = () => ({
    body: {
      issuer: o,
      authorization_endpoint: `${o}/authorize`,
      token_endpoint: `${o}/token`,
      registration_endpoint: `${o}/register`,
      code_challenge_methods_supported: ['S256'],
      response_types_supported: ['code'],
      ...(asMetadata?.(o) ?? {}),
    },
  });
  routes['POST /register'] = () => ({ status: 201, body: { client_id: 'victim-at-evil' } });
  routes['POST /token'] = () => ({
    body: { access_token: 'evil-access-token', token_type: 'Bearer', expires_in: 3600 },
  });
  if (onAuthorize) routes['GET /authorize'] = onAuthorize;
  return evil;
}

const requestsTo = (server, method, p) => server.seen.filter((r) => r.method === method && r.path === p);

before(async () => {
  const port = await freePort();
  const originPort = await freePort();
  honestUrl = `http://127.0.0.1:${port}/mcp`;
  const originAudience = `http://127.0.0.1:${originPort}`;
  const out = execFileSync('bash', [SCRIPT, 'start'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, MRTR_OIDC_RESOURCE: `${honestUrl},${originAudience}` },
  });
  facts = Object.fromEntries(out.trim().split('\n').map((l) => l.split(/=(.*)/s).slice(0, 2)));
  assert.equal(await serve(['--listen', `127.0.0.1:${port}`, '--oauth-issuer', facts.MRTR_OIDC_ISSUER,
    '--oauth-audience', honestUrl]), honestUrl);
  originUrl = await serve(['--listen', `127.0.0.1:${originPort}`, '--oauth-issuer', facts.MRTR_OIDC_ISSUER,
    '--oauth-audience', originAudience]);
});

after(() => {
  for (const c of children) if (c.exitCode === null) c.kill();
  for (const s of servers) s.close();
  if (facts?.MRTR_OIDC_PID) execFileSync('bash', [SCRIPT, 'stop', facts.MRTR_OIDC_PID], { stdio: 'inherit' });
  fs.rmSync(work, { recursive: true, force: true });
});

test('N1: a mix-up through a hostile authorization server gets the attacker no code and no verifier', async () => {
  const meta = await (await fetch(`${facts.MRTR_OIDC_ISSUER}/.well-known/openid-configuration`)).json();
  assert.equal(meta.authorization_response_iss_parameter_supported, true, 'the provider does not send iss');
  // The attacker's own client at the honest provider (open registration, a
  // loopback redirect URI: any port matches, RFC 8252 section 7.3).
  const reg = await fetch(meta.registration_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'mrtr', redirect_uris: ['http://127.0.0.1:1/callback'], token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], application_type: 'native',
    }),
  });
  const attackerClient = (await reg.json()).client_id;
  assert.ok(attackerClient, 'the attacker could not register');
  // The hostile authorization endpoint: on to the honest one, with the
  // attacker's client id and the honest resource, but mrtr's state, PKCE
  // challenge and loopback callback.
  const evil = await hostileServer({
    authorize: (_req, url) => {
      const to = new URL(meta.authorization_endpoint);
      const q = url.searchParams;
      to.search = new URLSearchParams({
        response_type: 'code', client_id: attackerClient, redirect_uri: q.get('redirect_uri'), scope: 'mcp',
        state: q.get('state'), code_challenge: q.get('code_challenge'),
        code_challenge_method: q.get('code_challenge_method'), resource: honestUrl,
      });
      return { status: 302, headers: { location: to.href } };
    },
  });
  const asAlice = (u) => authorize(u, { user: 'alice', provider: new URL(facts.MRTR_OIDC_ISSUER).origin });
  const r = await mrtrCall([`${evil.origin}/mcp`, 'tool', 'hello', '--no-input'], { browser: asAlice });
  assert.ok(r.loggedIn, `no login URL was printed:\n${r.stderr}`);
  // The browser went all the way: the provider issued a code for alice and
  // sent it, with iss, to mrtr's callback.
  assert.ok(!(r.browsed instanceof Error), `the browser failed: ${r.browsed?.message}`);
  assert.equal(r.browsed.iss, facts.MRTR_OIDC_ISSUER);
  assert.ok(r.browsed.code);
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, /another authorization server than http:\/\/127\.0\.0\.1:\d+ .*mix-up/);
  assert.ok(r.stderr.includes(`log in at ${evil.origin}`), 'the issuer was not shown beside the login URL');
  assert.deepEqual(requestsTo(evil, 'POST', '/token'), [], 'the hostile token endpoint got a request');
  assert.ok(!evil.seen.some((x) => x.body.includes(r.browsed.code) || x.search.includes(r.browsed.code)),
    'the code reached the hostile server');
  assert.ok(!r.stderr.includes(r.browsed.code) && !r.stdout.includes(r.browsed.code), 'the code was printed');
});

test('N2: discovered URLs on other ports of this machine are never requested', async () => {
  const victim = await recorder();
  const cases = [
    // The metadata names an "authorization server" on the victim service.
    await hostileServer({ authorizationServers: [`${victim.origin}/internal/admin?op=wipe&x=`] }),
    // The authorization server's metadata names the victim as its
    // registration endpoint (a JSON POST) and its token endpoint.
    await hostileServer({
      asMetadata: () => ({
        registration_endpoint: `${victim.origin}/admin/reset?confirm=yes`,
        token_endpoint: `${victim.origin}/admin/token`,
      }),
    }),
    // ... and its authorization endpoint, which --open would show the browser.
    await hostileServer({ asMetadata: () => ({ authorization_endpoint: `${victim.origin}/admin/ui` }) }),
  ];
  for (const evil of cases) {
    const r = await mrtrCall([`${evil.origin}/mcp`, 'tool', 'hello', '--no-input'], {
      browser: async () => assert.fail('a login URL was printed'),
    });
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /\(http:\/\/127\.0\.0\.1:\d+\) is refused: plain http:\/\/ to another address of this machine/);
    assert.ok(!r.stderr.includes('wipe') && !r.stderr.includes('reset'), r.stderr);
    assert.ok(evil.seen.length > 0, 'the hostile server was not asked at all');
  }
  assert.deepEqual(victim.seen.map((x) => `${x.method} ${x.path}${x.search}`), [],
    'a request reached the service on this machine');
});

test('N4: a client secret goes only to the issuer named with it', async () => {
  const evil = await hostileServer();
  const SECRET = 's3cr3t-client-secret';
  const args = [`${evil.origin}/mcp`, 'tool', 'hello', '--no-input', '--client-credentials', '--client-id', 'corp-client',
    '--client-secret-env', 'PROBE_SECRET'];
  const unpinned = await mrtrCall(args, { env: { PROBE_SECRET: SECRET } });
  assert.equal(unpinned.code, 2, unpinned.stderr);
  assert.match(unpinned.stderr, /--client-secret-env needs --oauth-issuer/);
  const pinned = await mrtrCall([...args, '--oauth-issuer', facts.MRTR_OIDC_ISSUER], { env: { PROBE_SECRET: SECRET } });
  assert.equal(pinned.code, 3, pinned.stderr);
  assert.match(pinned.stderr, /names another authorization server than the expected issuer/);
  assert.deepEqual(requestsTo(evil, 'POST', '/token'), [], 'the hostile token endpoint got a request');
  const basic = Buffer.from(`corp-client:${SECRET}`).toString('base64');
  for (const x of evil.seen) {
    assert.ok(!x.body.includes(SECRET) && !JSON.stringify(x.headers).includes(basic), 'the secret reached the server');
  }
  assert.ok(!(unpinned.stderr + pinned.stderr).includes(SECRET));
});

test('N5: no OAuth and no bearer token over plain http to a host that is not loopback', async () => {
  const evil = await hostileServer();
  // A name for 127.0.0.1 that mrtr does not take for loopback: a remote host.
  const remote = `http://0x7f000001:${evil.port}/mcp`;
  const login = await mrtrCall([remote, 'tool', 'hello', '--no-input'], {
    browser: async () => assert.fail('a login URL was printed'),
  });
  assert.equal(login.code, 3, login.stderr);
  assert.deepEqual(evil.seen.map((x) => `${x.method} ${x.path}`), ['POST /mcp'],
    'discovery ran against a plain-http remote server');
  const oauth = await mrtrCall([remote, 'tool', 'hello', '--no-input', '--scope', 'mcp']);
  assert.equal(oauth.code, 2, oauth.stderr);
  assert.match(oauth.stderr, /OAuth over plain http:\/\/ to a host that is not loopback/);
  const bearer = await mrtrCall([remote, 'tool', 'hello', '--no-input', '--bearer-env', 'TOKEN'],
    { env: { TOKEN: 'remote-bearer' } });
  assert.equal(bearer.code, 2, bearer.stderr);
  assert.match(bearer.stderr, /use https:\/\/, or pass --insecure-http/);
  const before = evil.seen.length;
  const insecure = await mrtrCall([remote, 'tool', 'hello', '--no-input', '--bearer-env', 'TOKEN', '--insecure-http'],
    { env: { TOKEN: 'remote-bearer' } });
  assert.equal(insecure.code, 3, insecure.stderr);
  assert.equal(evil.seen[before]?.headers.authorization, 'Bearer remote-bearer', 'the opened way was not taken');
});

test('N10: a token whose resource is the origin is used again, and --logout removes it', async () => {
  const cache = 'origin.json';
  const answer = JSON.stringify({ user_name: { action: 'accept', content: { name: 'Ada' } } });
  const call = (...extra) => mrtrCall([originUrl, 'tool', 'test_input_required_result_elicitation', '--answers', answer,
    '--no-input',
    '--oauth-issuer', facts.MRTR_OIDC_ISSUER, ...extra], { cache, browser: (u) => authorize(u, { user: 'alice' }) });
  const first = await call();
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, /Ada/);
  assert.ok(first.loggedIn);
  const saved = JSON.parse(fs.readFileSync(path.join(work, cache), 'utf8')).tokens;
  assert.equal(saved.length, 1);
  assert.equal(saved[0].resource, new URL(originUrl).origin);
  const second = await call('--no-login');
  assert.equal(second.code, 0, `the saved login was not found: ${second.stderr}`);
  const out = await mrtrCall([originUrl, '--logout'], { cache });
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stdout, /logged out of .* \(1 saved token removed\)/);
  assert.deepEqual(JSON.parse(fs.readFileSync(path.join(work, cache), 'utf8')).tokens, []);
});
