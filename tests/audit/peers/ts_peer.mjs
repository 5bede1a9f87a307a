// MRTR audit peer on the official MCP TypeScript SDK v2
// (@modelcontextprotocol/server 2.4.0 + @modelcontextprotocol/node 2.1.2, pinned
// in scripts/audit-peers.sh and installed into .cache/ts-peer).
//
// A black-box target for `mrtr audit`. requestState is protected exactly the way
// the SDK documents it: `createRequestStateCodec({ key, ttlSeconds, bind })`
// (HMAC-SHA256, "v1." b64url({p, exp, b?}) "." b64url(mac); signed, not
// encrypted), its `verify` dropped into `ServerOptions.requestState.verify` so the
// seam refuses bad state with the frozen -32602 "Invalid or expired
// requestState" before a handler runs, and handlers reading the verified payload
// with `ctx.mcpReq.requestState()`. The `bind` callback is the one the codec's
// docs show: the request method and the authenticated client id
// (`ctx.http?.authInfo?.clientId`), stored as a keyed tag.
//
// Fixture surface (same on every audit peer):
//   tool   confirm_action {item}: form elicitation key `confirm` (boolean
//          `confirm`), then `done: <item>` or `cancelled: <item>`.
//   tool   ask_name {}: key `name` (string `name`), then `Hello, <name>!`.
//   prompt review: key `focus` (string `focus`), then one user message.
// An answer counts only when the verified state says its question was asked;
// otherwise the handler asks again.
//
// Toy authentication: `Authorization: Bearer alice-token` is alice, `Bearer
// bob-token` is bob, anything else (or nothing) is anonymous. The principal is
// handed to the SDK as the pass-through `authInfo` (`req.auth`, which
// `toNodeHandler` forwards); its `clientId` is the user name.
//
// Environment:
//   PEER_STATE_KEY  HMAC key; the codec wants >= 32 bytes, so the key is
//                   SHA-256(PEER_STATE_KEY) (32 raw bytes). Unset: 32 random
//                   bytes per process (what the SDK's example does).
//   PEER_STATE_TTL  ttlSeconds (default: the codec's 600).
//   PEER_PORT       port on 127.0.0.1 (default 0 = any free port).
//   TS_PEER_DIR     where the npm packages are installed (default
//                   <repo>/.cache/ts-peer).
// Prints `listening on http://127.0.0.1:PORT/mcp` on stderr when ready.

import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const pkgDir = process.env.TS_PEER_DIR || join(repo, '.cache/ts-peer');
const require = createRequire(join(pkgDir, 'package.json'));
const { McpServer, createMcpHandler, createRequestStateCodec, inputRequired, inputResponse } =
  require('@modelcontextprotocol/server');
const { toNodeHandler, localhostHostValidation, localhostOriginValidation } = require('@modelcontextprotocol/node');
const z = require('zod/v4');

const USERS = { 'alice-token': 'alice', 'bob-token': 'bob' };

const keyText = process.env.PEER_STATE_KEY;
const key = keyText ? createHash('sha256').update(keyText, 'utf8').digest() : randomBytes(32);
const ttlText = process.env.PEER_STATE_TTL;
const codec = createRequestStateCodec({
  key: new Uint8Array(key),
  ...(ttlText ? { ttlSeconds: Number(ttlText) } : {}),
  bind: (ctx) => `${ctx.mcpReq.method}\0${ctx.http?.authInfo?.clientId ?? ''}`,
});

function form(k, message, prop) {
  return {
    [k]: inputRequired.elicit({
      message,
      requestedSchema: { type: 'object', properties: { [k]: prop }, required: [k] },
    }),
  };
}

function text(t) {
  return { content: [{ type: 'text', text: t }] };
}

/** True when the verified state payload says `k` was asked. */
function asked(ctx, k) {
  const state = ctx.mcpReq.requestState();
  return state !== undefined && state !== null && typeof state === 'object' && state.asked === k;
}

function buildServer() {
  const server = new McpServer(
    { name: 'mrtr-audit-peer', version: '1.0.0' },
    { capabilities: { tools: {}, prompts: {} }, requestState: { verify: codec.verify } },
  );

  server.registerTool(
    'confirm_action',
    { description: 'Ask the user to confirm an action on item.', inputSchema: z.object({ item: z.string() }) },
    async ({ item }, ctx) => {
      const res = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
      if (res.kind !== 'elicit' || !asked(ctx, 'confirm')) {
        return inputRequired({
          inputRequests: form('confirm', `Confirm the action on ${item}?`, { type: 'boolean' }),
          requestState: await codec.mint({ asked: 'confirm', item }, ctx),
        });
      }
      const ok = res.action === 'accept' && res.content?.confirm === true;
      return text(ok ? `done: ${item}` : `cancelled: ${item}`);
    },
  );

  server.registerTool('ask_name', { description: 'Ask the user name and greet them.' }, async (ctx) => {
    const res = inputResponse(ctx.mcpReq.inputResponses, 'name');
    const name = res.kind === 'elicit' && res.action === 'accept' ? res.content?.name : undefined;
    if (typeof name !== 'string' || !asked(ctx, 'name')) {
      return inputRequired({
        inputRequests: form('name', 'What is your name?', { type: 'string' }),
        requestState: await codec.mint({ asked: 'name' }, ctx),
      });
    }
    return text(`Hello, ${name}!`);
  });

  server.registerPrompt('review', { description: 'A review prompt that asks what to focus on.' }, async (ctx) => {
    const res = inputResponse(ctx.mcpReq.inputResponses, 'focus');
    const focus = res.kind === 'elicit' && res.action === 'accept' ? res.content?.focus : undefined;
    if (typeof focus !== 'string' || !asked(ctx, 'focus')) {
      return inputRequired({
        inputRequests: form('focus', 'What should the review focus on?', { type: 'string' }),
        requestState: await codec.mint({ asked: 'focus' }, ctx),
      });
    }
    return {
      messages: [{ role: 'user', content: { type: 'text', text: `Please review the code, focusing on ${focus}.` } }],
    };
  });

  return server;
}

const handler = createMcpHandler(buildServer, {
  onerror: (err) => console.error(`[ts-peer] ${err?.message ?? err}`),
});
const serve = toNodeHandler(handler);
const validateHost = localhostHostValidation();
const validateOrigin = localhostOriginValidation();

const http = createServer(async (req, res) => {
  if (!validateHost(req, res) || !validateOrigin(req, res)) return;
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  if (url.pathname !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  const authz = req.headers['authorization'];
  const m = typeof authz === 'string' ? /^Bearer (.+)$/i.exec(authz) : null;
  const user = m ? USERS[m[1]] : undefined;
  if (user) req.auth = { token: m[1], clientId: user, scopes: [] };
  await serve(req, res);
});

http.listen(Number(process.env.PEER_PORT || 0), '127.0.0.1', () => {
  console.error(`listening on http://127.0.0.1:${http.address().port}/mcp`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
