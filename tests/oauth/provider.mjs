// A real OAuth 2.1 / OpenID authorization server for end-to-end tests of
// `mrtr call` (client) and `mrtr serve --oauth-issuer` (resource server):
// node-oidc-provider (npm `oidc-provider`), configured for MCP and wrapped in
// a plain node:http server on a loopback port, with minimal login/consent
// pages of our own (users alice and bob).
//
// Run it through scripts/oidc-provider.sh (install/start/stop), which reads its
// options from the environment (documented there):
//   MRTR_OIDC_RESOURCE  resource indicators (JWT audiences), comma separated
//   MRTR_OIDC_AT_TTL    access token lifetime in seconds (default 300)
//   MRTR_OIDC_PORT      port (default 0: a free one)
//   MRTR_OIDC_CLIENT_SECRET  secret of the static client `mrtr-ci`
//   MRTR_OIDC_JWT_ALG   RS256 (default), ES256 or EdDSA for access tokens
//   MRTR_OIDC_DEFAULT_SCOPE  scope for authorization requests naming none (default mcp)
//   MRTR_OIDC_CACHE     where oidc-provider is installed (default .cache/oidc-provider)
// On start it prints `mrtr-oidc-provider: listening on ISSUER` to stdout.
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CACHE = process.env.MRTR_OIDC_CACHE || path.join(HERE, '../../.cache/oidc-provider');
const { default: Provider, errors } = await import(
  pathToFileURL(path.join(CACHE, 'node_modules/oidc-provider/lib/index.js')).href
);

const env = process.env;
const RESOURCES = (env.MRTR_OIDC_RESOURCE || 'http://127.0.0.1:8808/mcp')
  .split(/[\s,]+/).filter(Boolean);
const AT_TTL = Number(env.MRTR_OIDC_AT_TTL || 300);
const PORT = Number(env.MRTR_OIDC_PORT || 0);
const CLIENT_SECRET = env.MRTR_OIDC_CLIENT_SECRET || 'mrtr-ci-test-only-secret';
const JWT_ALG = env.MRTR_OIDC_JWT_ALG || 'RS256';
const DEFAULT_SCOPE = env.MRTR_OIDC_DEFAULT_SCOPE ?? 'mcp';
const SCOPES = 'mcp mcp:admin'; // what a resource server grants (offline_access is an OIDC scope)
// Test users: login name = account id = `sub` of their tokens.
const USERS = { alice: 'alice-password', bob: 'bob-password' };

// Signing keys, fresh per run: RS256 always (ID tokens default to it), plus the
// access token key if MRTR_OIDC_JWT_ALG asks for another type.
function privateJwk(type, opts, alg) {
  const { privateKey } = crypto.generateKeyPairSync(type, opts);
  return { ...privateKey.export({ format: 'jwk' }), alg, use: 'sig', kid: `${alg.toLowerCase()}-${crypto.randomUUID().slice(0, 8)}` };
}
const keys = [privateJwk('rsa', { modulusLength: 2048 }, 'RS256')];
if (JWT_ALG === 'ES256') keys.unshift(privateJwk('ec', { namedCurve: 'P-256' }, 'ES256'));
else if (JWT_ALG === 'EdDSA') keys.unshift(privateJwk('ed25519', undefined, 'EdDSA'));
else if (JWT_ALG !== 'RS256') throw new Error(`MRTR_OIDC_JWT_ALG: unsupported ${JWT_ALG}`);

// Listen first (port 0 = free), so that the issuer can name the real port.
let handler = (_req, res) => { res.statusCode = 503; res.end(); };
const server = http.createServer((req, res) => handler(req, res));
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(PORT, '127.0.0.1', resolve);
});
const ISSUER = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(ISSUER, {
  clients: [{
    // Static confidential client for the client credentials grant.
    client_id: 'mrtr-ci',
    client_secret: CLIENT_SECRET,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic', // also accepts client_secret_post below
    application_type: 'web',
  }],
  clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
  // Defaults for dynamically registered clients that omit these: native (so a
  // loopback redirect URI matches on any port, RFC 8252 7.3) and refreshable.
  clientDefaults: {
    application_type: 'native',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
    id_token_signed_response_alg: 'RS256',
  },
  jwks: { keys },
  cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
  // mcp scopes listed here too so that discovery's scopes_supported names them;
  // access tokens only carry the resource server's scopes (SCOPES).
  scopes: ['openid', 'offline_access', ...SCOPES.split(' ')],
  responseTypes: ['code'],
  claims: { openid: ['sub'] },
  pkce: { required: () => true }, // oidc-provider 9 only implements S256
  features: {
    devInteractions: { enabled: false }, // our own pages below check passwords
    dPoP: { enabled: false }, // access tokens are always plain Bearer tokens
    registration: { enabled: true, initialAccessToken: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // A token request naming no resource gets the grant's resource if it has
      // only one (even with scope openid); with several it must name one.
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resource) => {
        if (!RESOURCES.includes(resource)) throw new errors.InvalidTarget();
        return {
          scope: SCOPES,
          audience: resource,
          accessTokenTTL: AT_TTL,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: JWT_ALG } },
        };
      },
    },
  },
  // Refresh tokens for every client allowed the grant, offline_access or not,
  // and not tied to the login session.
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  expiresWithSession: async () => false,
  ttl: {
    AccessToken: AT_TTL,
    ClientCredentials: AT_TTL,
    RefreshToken: 24 * 60 * 60,
    IdToken: 60 * 60,
    Interaction: 10 * 60,
    Session: 24 * 60 * 60,
    Grant: 24 * 60 * 60,
  },
  clientBasedCORS: () => true,
  findAccount: async (_ctx, sub) => (Object.hasOwn(USERS, sub)
    ? { accountId: sub, claims: async () => ({ sub }) }
    : undefined),
});

// --- interaction pages: GET /interaction/UID shows a login or consent form ---
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
function page(res, title, body, status = 200) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(`<!doctype html><html><head><title>${esc(title)}</title></head><body><h1>${esc(title)}</h1>${body}</body></html>`);
}
function loginForm(res, uid, error) {
  page(res, 'Sign in', `${error ? `<p class="error">${esc(error)}</p>` : ''}
<form method="post" action="/interaction/${esc(uid)}/login">
<input name="login" placeholder="alice or bob"> <input name="password" type="password">
<button type="submit">Sign in</button></form>`);
}
async function readForm(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
}

async function interaction(req, res, uid, action) {
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) throw new errors.InvalidRequest('interaction mismatch');
  const { prompt, params, session } = details;
  if (req.method === 'GET' && !action) {
    if (prompt.name === 'login') return loginForm(res, uid);
    return page(res, 'Authorize', `<p>Client ${esc(params.client_id)} asks for scope
"${esc(params.scope ?? '')}" on ${esc([].concat(params.resource ?? []).join(' '))}.</p>
<form method="post" action="/interaction/${esc(uid)}/confirm"><button type="submit">Allow</button></form>
<form method="post" action="/interaction/${esc(uid)}/abort"><button type="submit">Deny</button></form>`);
  }
  if (req.method !== 'POST') return page(res, 'Method not allowed', '', 405);
  if (action === 'login' && prompt.name === 'login') {
    const form = await readForm(req);
    const login = form.get('login') ?? '';
    if (!Object.hasOwn(USERS, login) || USERS[login] !== form.get('password')) {
      return loginForm(res, uid, 'login failed: unknown user or wrong password');
    }
    return provider.interactionFinished(req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false });
  }
  if (action === 'confirm' && prompt.name === 'consent') {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const d = prompt.details;
    if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
    if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
    for (const [resource, scopes] of Object.entries(d.missingResourceScopes ?? {})) {
      grant.addResourceScope(resource, scopes.join(' '));
    }
    const grantId = await grant.save();
    return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }
  if (action === 'abort') {
    return provider.interactionFinished(req, res, {
      error: 'access_denied', error_description: 'the user denied the request',
    }, { mergeWithLastSubmission: false });
  }
  return page(res, 'Unexpected step', `<p>${esc(action)} during ${esc(prompt.name)}</p>`, 400);
}

const callback = provider.callback();
handler = (req, res) => {
  const m = /^\/interaction\/([^/?]+)(?:\/(login|confirm|abort))?(?:\?|$)/.exec(req.url);
  if (!m) return callback(req, res);
  interaction(req, res, m[1], m[2]).catch((err) => {
    console.error('interaction error:', err);
    page(res, 'Interaction error', `<pre>${esc(err.error ?? 'error')}: ${esc(err.error_description ?? err.message)}</pre>`, err.statusCode || 500);
  });
};

// oidc-provider denies a request that ends up with no scope at all ("no scope
// was granted"); an MCP client may send none, so give it the default scope.
provider.use(async (ctx, next) => {
  if (DEFAULT_SCOPE && ctx.method === 'GET' && ctx.path === '/auth' && !ctx.query.scope) {
    ctx.query = { ...ctx.query, scope: DEFAULT_SCOPE };
  }
  await next();
});

provider.on('server_error', (_ctx, err) => console.error('server_error:', err));
for (const event of ['grant.error', 'authorization.error', 'registration_create.error']) {
  provider.on(event, (_ctx, err) => console.error(`${event}: ${err.error ?? ''} ${err.error_description ?? err.message}`));
}
const shutdown = () => server.close(() => process.exit(0));
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
console.log(`mrtr-oidc-provider: resources ${RESOURCES.join(' ')}; access token ttl ${AT_TTL}s; alg ${JWT_ALG}`);
console.log(`mrtr-oidc-provider: listening on ${ISSUER}`);
