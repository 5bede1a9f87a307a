// End to end against a real authorization server nobody here wrote
// (node-oidc-provider, tests/oauth/provider.mjs): `mrtr call` discovers,
// registers, logs in and calls a tool on `mrtr serve --oauth-issuer ...`
// through a two-round MRTR flow; it refreshes an expired token (before sending
// it, and after the server refused it); a token for another audience is refused;
// a state issued to alice and presented with bob's token is the frozen -32602;
// the client credentials grant works without a browser; --logout forgets the
// tokens; and no token reaches the terminal or the server's log. Also:
// `mrtr call -H 'Authorization: Bearer alice-token'` finishes the confirmation
// flow of mrtr-server's embed_axum example.
//
//   bash scripts/oauth-e2e.sh          (builds nothing: run after cargo test's build)
//   node --test tests/oauth/e2e.mjs    (MRTR_BIN, MRTR_EMBED_AXUM: the binaries)
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
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
const EMBED_AXUM = process.env.MRTR_EMBED_AXUM || path.join(REPO, 'target/debug/examples/embed_axum');
/** Access tokens live this long: shorter than the client's 30 s margin, so it refreshes. */
const TTL = 8;
const SECRET = crypto.randomBytes(12).toString('hex');

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mrtr-oauth-e2e-'));
const children = [];
let facts; // what scripts/oidc-provider.sh start printed
let mcpUrl; // mrtr serve's endpoint, the tokens' audience
let otherUrl; // another audience the provider issues tokens for
let serveLog = ''; // mrtr serve's stderr
const secrets = new Set(); // every token seen, none of which may be printed

async function freePort() {
  const s = net.createServer();
  await new Promise((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return port;
}

/** Starts `cmd` and resolves once its stderr says `listening on http://ADDR/mcp`. */
function startServer(cmd, args, onLog) {
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, RUST_LOG: 'info' } });
  children.push(child);
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`${cmd} did not start:\n${seen}`)), 60_000);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      seen += chunk;
      onLog?.(chunk);
      const m = seen.match(/listening on (http:\/\/[0-9.:]+\/mcp)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on('exit', (code) => reject(new Error(`${cmd} exited (${code}):\n${seen}`)));
  });
}

/**
 * Runs `mrtr call ARGS` with the token cache of this test; when it prints a
 * login URL, `browser(url)` plays the user. Resolves to { code, stdout, stderr }
 * once the login has settled; a login that failed fails the test.
 */
async function mrtrCall(args, { browser, env = {} } = {}) {
  const tokenCache = path.join(work, 'tokens.json');
  const run = await runCall(MRTR, args, { tokenCache, children, browser, env });
  if (run.browsed instanceof Error) throw run.browsed;
  return run;
}

const asAlice = (url) => authorize(url, { user: 'alice' });
const ELICIT = 'test_input_required_result_elicitation';
const ANSWER = JSON.stringify({ user_name: { action: 'accept', content: { name: 'Ada' } } });
// The provider runs on another loopback port than the server: naming it as the
// expected issuer is what lets discovery fetch it over plain http (and pins it).
const bare = (...extra) => [mcpUrl, 'tool', ELICIT, '--answers', ANSWER, '--no-input', ...extra];
const elicit = (...extra) => bare('--oauth-issuer', facts.MRTR_OIDC_ISSUER, ...extra);

function cache() {
  return JSON.parse(fs.readFileSync(path.join(work, 'tokens.json'), 'utf8'));
}
function remember(c) {
  for (const t of c.tokens) {
    secrets.add(t.access_token);
    if (t.refresh_token) secrets.add(t.refresh_token);
  }
}
function assertNoSecret(text, where) {
  for (const s of secrets) assert.ok(!text.includes(s), `a token reached ${where}`);
}

/** The provider's metadata and a registered native client, for the raw requests. */
async function tokenFor(user, resource) {
  const meta = await (await fetch(`${facts.MRTR_OIDC_ISSUER}/.well-known/openid-configuration`)).json();
  const reg = await fetch(meta.registration_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      redirect_uris: ['http://127.0.0.1:1/callback'], token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
    }),
  });
  const client = await reg.json();
  const verifier = crypto.randomBytes(32).toString('base64url');
  const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
  const auth = new URL(meta.authorization_endpoint);
  auth.search = new URLSearchParams({
    response_type: 'code', client_id: client.client_id, redirect_uri: 'http://127.0.0.1:1/callback',
    scope: 'mcp', state: 's', resource, code_challenge: challenge, code_challenge_method: 'S256',
  });
  const { code } = await authorize(auth.href, { user, follow: false });
  const res = await fetch(meta.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id,
      redirect_uri: 'http://127.0.0.1:1/callback', resource,
    }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, `token request: ${body.error}`);
  secrets.add(body.access_token);
  return body.access_token;
}

/** One JSON-RPC request to mrtr serve as the holder of `token`. */
async function post(token, body) {
  const res = await fetch(mcpUrl, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`, 'content-type': 'application/json',
      accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28',
      'mcp-method': body.method, 'mcp-name': body.params.name,
    },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

before(async () => {
  const port = await freePort();
  mcpUrl = `http://127.0.0.1:${port}/mcp`;
  otherUrl = `http://127.0.0.1:${await freePort()}/other`;
  const out = execFileSync('bash', [SCRIPT, 'start'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      ...process.env, MRTR_OIDC_RESOURCE: `${mcpUrl},${otherUrl}`, MRTR_OIDC_AT_TTL: String(TTL),
      MRTR_OIDC_CLIENT_SECRET: SECRET,
    },
  });
  facts = Object.fromEntries(out.trim().split('\n').map((l) => l.split(/=(.*)/s).slice(0, 2)));
  const listening = await startServer(MRTR, [
    'serve', '--listen', `127.0.0.1:${port}`, '--oauth-issuer', facts.MRTR_OIDC_ISSUER,
    '--oauth-audience', mcpUrl, '--oauth-skew', '0',
  ], (chunk) => (serveLog += chunk));
  assert.equal(listening, mcpUrl);
});

after(() => {
  for (const c of children) if (c.exitCode === null) c.kill();
  if (facts?.MRTR_OIDC_PID) execFileSync('bash', [SCRIPT, 'stop', facts.MRTR_OIDC_PID], { stdio: 'inherit' });
  fs.rmSync(work, { recursive: true, force: true });
});

test('a request without a token gets 401 and the challenge that says where to log in', async () => {
  const res = await fetch(mcpUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  assert.equal(res.status, 401);
  const challenge = res.headers.get('www-authenticate');
  const metadataUrl = `${new URL(mcpUrl).origin}/.well-known/oauth-protected-resource/mcp`;
  assert.match(challenge, new RegExp(`^Bearer resource_metadata="${metadataUrl}"`));
  const prm = await (await fetch(metadataUrl)).json();
  assert.equal(prm.resource, mcpUrl);
  assert.deepEqual(prm.authorization_servers, [facts.MRTR_OIDC_ISSUER]);
});

test('mrtr call discovers, registers, logs in alice and finishes a two-round flow', async () => {
  // The person takes longer over the login than --request-timeout allows one
  // request: the login is not one of the flow's requests.
  // Before the person, something else on the machine sends the listener a
  // forged redirect (another state) and holds idle connections to it: the
  // login goes on regardless.
  const forged = [];
  const slowAlice = async (url) => {
    const callback = new URL(new URL(url).searchParams.get('redirect_uri'));
    for (let i = 0; i < 3; i++) forged.push(net.connect(Number(callback.port), '127.0.0.1'));
    const res = await fetch(`${callback.href}?code=forged&state=forged`);
    forged.status = res.status;
    await new Promise((resolve) => setTimeout(resolve, 3000));
    return asAlice(url);
  };
  const r = await mrtrCall(elicit('--request-timeout', '2'), { browser: slowAlice });
  for (const s of forged) s.destroy();
  assert.equal(r.code, 0, r.stderr);
  assert.equal(forged.status, 400, 'the forged redirect was not refused');
  assert.ok(r.loggedIn, 'no login URL was printed');
  assert.ok(
    r.stderr.includes(`The server asks you to log in at ${facts.MRTR_OIDC_ISSUER}.`),
    `the issuer is not shown beside the login URL:\n${r.stderr}`,
  );
  assert.match(r.stdout, /Ada/);
  const c = cache();
  remember(c);
  assert.equal(c.tokens.length, 1);
  assert.equal(c.tokens[0].resource, mcpUrl);
  assert.equal(c.tokens[0].server, mcpUrl);
  assert.equal(c.tokens[0].issuer, facts.MRTR_OIDC_ISSUER);
  assert.ok(c.tokens[0].refresh_token, 'no refresh token was kept');
  assert.equal(Object.keys(c.clients).length, 1, 'the registered client is kept');
  assert.equal(fs.statSync(path.join(work, 'tokens.json')).mode & 0o777, 0o600);
  assertNoSecret(r.stdout + r.stderr, "mrtr call's output");
});

test('an expired token is refreshed before it is sent, without a new login', async () => {
  const before = cache().tokens[0];
  await new Promise((resolve) => setTimeout(resolve, (TTL + 1) * 1000));
  const r = await mrtrCall(elicit('--no-login'));
  assert.equal(r.code, 0, r.stderr);
  assert.ok(!r.loggedIn);
  const now = cache().tokens[0];
  remember(cache());
  assert.notEqual(now.access_token, before.access_token);
  assertNoSecret(r.stdout + r.stderr, "mrtr call's output");
});

test('a token the server refuses as expired is refreshed once and the call goes on', async () => {
  await new Promise((resolve) => setTimeout(resolve, (TTL + 1) * 1000));
  // The cache believes the (expired) token good for an hour: only the server's
  // 401 invalid_token can tell the client to refresh.
  const c = cache();
  const stale = c.tokens[0].access_token;
  c.tokens[0].expires_at = Math.floor(Date.now() / 1000) + 3600;
  fs.writeFileSync(path.join(work, 'tokens.json'), JSON.stringify(c));
  const r = await mrtrCall(elicit('--no-login'));
  assert.equal(r.code, 0, r.stderr);
  remember(cache());
  assert.notEqual(cache().tokens[0].access_token, stale);
  assert.match(serveLog, /oauth: expired/, 'the refusal reason is in the private log');
});

test('a token for another audience is refused', async () => {
  const other = await tokenFor('alice', otherUrl);
  const r = await mrtrCall(bare('--bearer-env', 'OTHER_TOKEN'), { env: { OTHER_TOKEN: other } });
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, /401|unauthori[sz]ed|refused/i);
  assert.match(serveLog, /oauth: another audience/);
  assertNoSecret(r.stdout + r.stderr, "mrtr call's output");
});

test("a state issued to alice and presented with bob's token is the frozen -32602", async () => {
  const alice = await tokenFor('alice', mcpUrl);
  const bob = await tokenFor('bob', mcpUrl);
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'oauth-e2e', version: '0' },
    'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
  };
  const first = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: ELICIT, _meta: meta } };
  const irr = await post(alice, first);
  assert.equal(irr.status, 200);
  assert.equal(irr.body.result.resultType, 'input_required');
  const retry = {
    ...first, id: 2,
    params: { ...first.params, requestState: irr.body.result.requestState, inputResponses: JSON.parse(ANSWER) },
  };
  const stolen = await post(bob, retry);
  assert.equal(stolen.body.error?.code, -32602, JSON.stringify(stolen.body));
  assert.equal(stolen.body.error.message, 'Invalid or expired requestState');
  const own = await post(alice, { ...retry, id: 3 });
  assert.match(JSON.stringify(own.body.result.content), /Ada/);
});

test('the client credentials grant logs in without a browser', async () => {
  const withoutIssuer = await mrtrCall(
    bare('--client-credentials', '--client-id', facts.MRTR_OIDC_CLIENT_ID, '--client-secret-env', 'CI_SECRET',
      '--token-cache', path.join(work, 'cc.json')),
    { env: { CI_SECRET: SECRET } },
  );
  assert.equal(withoutIssuer.code, 2, withoutIssuer.stderr);
  assert.match(withoutIssuer.stderr, /--client-secret-env needs --oauth-issuer/);
  const r = await mrtrCall(
    [...elicit(), '--client-credentials', '--client-id', facts.MRTR_OIDC_CLIENT_ID, '--client-secret-env', 'CI_SECRET',
      '--token-cache', path.join(work, 'cc.json')],
    { env: { CI_SECRET: SECRET } },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.ok(!r.loggedIn);
  assert.match(r.stdout, /Ada/);
  secrets.add(SECRET);
  assertNoSecret(r.stdout + r.stderr, "mrtr call's output");
});

test('without --oauth-issuer, an authorization server on another loopback port is not fetched', async () => {
  const r = await mrtrCall(bare('--token-cache', path.join(work, 'none.json')), { browser: asAlice });
  assert.equal(r.code, 3, r.stderr);
  assert.ok(!r.loggedIn, 'a login URL was printed');
  assert.match(r.stderr, /the authorization server \(http:\/\/127\.0\.0\.1:\d+\) is refused: plain http:\/\/ to another address/);
  const allowed = await mrtrCall(bare('--token-cache', path.join(work, 'none.json'), '--oauth-allow-loopback-http'),
    { browser: asAlice });
  assert.equal(allowed.code, 0, allowed.stderr);
  assert.match(allowed.stdout, /Ada/);
});

test('--logout forgets the tokens, and --no-login then stops at the 401', async () => {
  const out = await mrtrCall([mcpUrl, '--logout']);
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stdout, /logged out of/);
  assert.equal(cache().tokens.length, 0);
  const r = await mrtrCall(elicit('--no-login'));
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, /no new login is allowed/);
});

test("no token reached mrtr serve's log", () => {
  assert.ok(secrets.size >= 5, `only ${secrets.size} tokens seen`);
  assertNoSecret(serveLog, "mrtr serve's log");
});

test("mrtr call -H 'Authorization: Bearer alice-token' finishes embed_axum's confirmation flow", async () => {
  const url = await startServer(EMBED_AXUM, ['--listen', '127.0.0.1:0']);
  const answers = JSON.stringify({ confirm: { action: 'accept', content: { confirm: true } } });
  const r = await mrtrCall([url, '-H', 'Authorization: Bearer alice-token', 'tool', 'slow_deploy',
    '--args', '{"service":"web","delay_ms":10}', '--answers', answers, '--no-input']);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(!r.stderr.includes('alice-token') && !r.stdout.includes('alice-token'));
  const refused = await mrtrCall([url, '-H', 'Authorization: Bearer carol-token', 'tool', 'slow_deploy',
    '--args', '{"service":"web","delay_ms":10}', '--no-input']);
  assert.equal(refused.code, 3, refused.stderr);
});
