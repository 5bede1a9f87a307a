// The official TypeScript SDK client (@modelcontextprotocol/client, pinned in
// scripts/legacy-clients.sh) in its 2025 era (versionNegotiation mode
// 'legacy': the plain `initialize` handshake, a session, and the server's
// questions sent to it as elicitation/create, sampling/createMessage and
// roots/list requests), completing every fixture flow of the reference server
// with fixed answers and checking each final text exactly.
//
// Usage (run by scripts/legacy-clients.sh, which sets LEGACY_CLIENTS_DIR to
// the directory the SDK is installed in):
//   node tests/legacy/ts_client.mjs http URL
//   node tests/legacy/ts_client.mjs stdio CMD [ARG...]
//
// LEGACY_TS_ERA=auto makes it a 2026-07-28 client instead (versionNegotiation
// mode 'auto': it probes with server/discover and, finding a modern server,
// answers the same questions from InputRequiredResults, retrying with its
// answers); it then expects the modern era, and runs the flows of both eras
// (not `logging` and `subscribe`, whose methods 2026-07-28 removed).
//
// LEGACY_TS_FLOWS (a comma-separated list of flow names) runs only those;
// default: every flow. `logging` (logging/setLevel, then test_tool_with_logging's
// three notifications/message) and `subscribe` (resources/subscribe and
// unsubscribe of test://watched-resource) need the server's `logging` and
// `resources.subscribe` capabilities.
//
// Prints one line per flow, `ok   NAME: TEXT` or `FAIL NAME: WHY`, then
// `legacy-ts: N passed, M failed`; exits 1 on any failure.
import { createRequire } from 'node:module';
import { isDeepStrictEqual } from 'node:util';
import path from 'node:path';

const dir = process.env.LEGACY_CLIENTS_DIR;
if (!dir) {
  console.error('ts_client: LEGACY_CLIENTS_DIR is not set (run scripts/legacy-clients.sh ts ...)');
  process.exit(2);
}
// The SDK is installed under LEGACY_CLIENTS_DIR, not beside this file.
const require = createRequire(path.join(dir, 'package.json'));
const sdk = await import(require.resolve('@modelcontextprotocol/client'));
const { Client, StreamableHTTPClientTransport } = sdk;

const [mode, ...rest] = process.argv.slice(2);
let transport;
if (mode === 'http' && rest.length === 1) {
  transport = new StreamableHTTPClientTransport(new URL(rest[0]));
} else if (mode === 'stdio' && rest.length >= 1) {
  const { StdioClientTransport } = await import(require.resolve('@modelcontextprotocol/client/stdio'));
  transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: 'inherit' });
} else {
  console.error('usage: ts_client.mjs http URL | stdio CMD [ARG...]');
  process.exit(2);
}

// Which era to speak: 'legacy' (the default) or 'auto' (expecting modern).
const ERA = process.env.LEGACY_TS_ERA ?? 'legacy';
if (ERA !== 'legacy' && ERA !== 'auto') {
  console.error(`ts_client: LEGACY_TS_ERA must be legacy or auto, not ${ERA}`);
  process.exit(2);
}
const WANTED_ERA = ERA === 'auto' ? 'modern' : 'legacy';
// The flows 2026-07-28 removed the methods of.
const LEGACY_ONLY = ['logging', 'subscribe'];

// The fixed answers.
const NAME = 'Alice';
const COLOR = 'blue';
const MODEL_TEXT = 'Paris';
const ROOT = { uri: 'file:///test/root', name: 'Test Root' };
const USER_INFO = { username: 'testuser', email: 'test@example.com' };
const DEFAULTS_ANSWER = { name: 'Jane Smith', age: 25, score: 88.5, status: 'inactive', verified: false };
const ENUMS_ANSWER = {
  untitledSingle: 'option1',
  titledSingle: 'value1',
  legacyEnum: 'opt1',
  untitledMulti: ['option1', 'option2'],
  titledMulti: ['value1', 'value2'],
};

// What the server asked during the current flow.
let asked = [];

const client = new Client(
  { name: 'mrtr-legacy-ts-client', version: '1.0.0' },
  {
    capabilities: { elicitation: { form: {} }, sampling: {}, roots: { listChanged: true } },
    versionNegotiation: { mode: ERA === 'auto' ? 'auto' : 'legacy' },
  },
);

client.setRequestHandler('elicitation/create', async (request) => {
  asked.push(request);
  const props = request.params.requestedSchema?.properties ?? {};
  let content;
  if ('confirm' in props) content = { confirm: true };
  else if ('color' in props) content = { color: COLOR };
  else if ('username' in props) content = USER_INFO;
  else if ('untitledSingle' in props) content = ENUMS_ANSWER;
  else if ('score' in props) content = DEFAULTS_ANSWER;
  else if ('name' in props) content = { name: NAME };
  else return { action: 'decline' };
  return { action: 'accept', content };
});
client.setRequestHandler('sampling/createMessage', async (request) => {
  asked.push(request);
  return { role: 'assistant', content: { type: 'text', text: MODEL_TEXT }, model: 'test-model', stopReason: 'endTurn' };
});
client.setRequestHandler('roots/list', async (request) => {
  asked.push(request);
  return { roots: [ROOT] };
});
// The log messages the server sent.
const logged = [];
client.setNotificationHandler('notifications/message', (n) => {
  logged.push(n.params);
});

/** Throws unless the server declared `capability` (a dotted path) at initialize. */
function requireCapability(capability) {
  let c = client.getServerCapabilities() ?? {};
  for (const k of capability.split('.')) c = c?.[k];
  if (!c) throw new Error(`the server declares no ${capability} capability`);
}

const textOf = (result) => (result?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');

/** Calls `tool` with `args`; the text, and what the server asked meanwhile. */
async function call(tool, args = {}) {
  asked = [];
  const result = await client.callTool({ name: tool, arguments: args });
  if (result.isError) throw new Error(`tool error: ${JSON.stringify(result.content)}`);
  return { text: textOf(result), asked: asked.map((r) => r.method ?? '?') };
}

function expectEqual(what, got, want) {
  if (!isDeepStrictEqual(got, want)) {
    throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  }
}

/** `PREFIX{json}`: the JSON after PREFIX, parsed (its key order is the server's). */
function jsonAfter(text, prefix) {
  if (!text.startsWith(prefix)) throw new Error(`text ${JSON.stringify(text)} does not start with ${JSON.stringify(prefix)}`);
  return JSON.parse(text.slice(prefix.length));
}

async function deployments() {
  const r = await client.readResource({ uri: 'mrtr://demo/deployments' });
  return Number(r.contents[0].text);
}

// name -> async () => the final text (throws on a mismatch).
const FLOWS = [
  ['elicitation', async () => {
    const r = await call('test_input_required_result_elicitation');
    expectEqual('asked', r.asked, ['elicitation/create']);
    expectEqual('text', r.text, `Hello, ${NAME}!`);
    return r.text;
  }],
  ['sampling', async () => {
    const r = await call('test_input_required_result_sampling');
    expectEqual('asked', r.asked, ['sampling/createMessage']);
    expectEqual('text', r.text, `The model said: ${MODEL_TEXT}`);
    return r.text;
  }],
  ['roots', async () => {
    const r = await call('test_input_required_result_list_roots');
    expectEqual('asked', r.asked, ['roots/list']);
    expectEqual('text', r.text, `Roots: ${ROOT.uri}`);
    return r.text;
  }],
  ['multi-round', async () => {
    const r = await call('test_input_required_result_multi_round');
    expectEqual('asked', r.asked, ['elicitation/create', 'elicitation/create']);
    expectEqual('text', r.text, `${NAME} likes ${COLOR}`);
    return r.text;
  }],
  ['deploy', async () => {
    const before = await deployments();
    const r = await call('deploy', { service: 'web' });
    expectEqual('asked', r.asked, ['elicitation/create']);
    expectEqual('text', r.text, `Deployed web (deployment #${before + 1}).`);
    expectEqual('deployments after', await deployments(), before + 1);
    return r.text;
  }],
  ['test_sampling', async () => {
    const r = await call('test_sampling', { prompt: 'Test prompt for sampling' });
    const [req] = asked;
    expectEqual('sampling params', { messages: req.params.messages, maxTokens: req.params.maxTokens }, {
      messages: [{ role: 'user', content: { type: 'text', text: 'Test prompt for sampling' } }],
      maxTokens: 100,
    });
    expectEqual('text', r.text, `LLM response: ${MODEL_TEXT}`);
    return r.text;
  }],
  ['test_elicitation', async () => {
    const r = await call('test_elicitation', { message: 'Please provide your information' });
    const [req] = asked;
    expectEqual('message', req.params.message, 'Please provide your information');
    expectEqual('required', req.params.requestedSchema.required, ['username', 'email']);
    expectEqual('content', jsonAfter(r.text, 'User response: action=accept, content='), USER_INFO);
    return r.text;
  }],
  ['sep1034-defaults', async () => {
    const r = await call('test_elicitation_sep1034_defaults');
    const p = asked[0].params.requestedSchema.properties;
    expectEqual('defaults', Object.fromEntries(Object.entries(p).map(([k, v]) => [k, [v.type, v.default]])), {
      name: ['string', 'John Doe'],
      age: ['integer', 30],
      score: ['number', 95.5],
      status: ['string', 'active'],
      verified: ['boolean', true],
    });
    expectEqual('content', jsonAfter(r.text, 'Elicitation completed: action=accept, content='), DEFAULTS_ANSWER);
    return r.text;
  }],
  ['sep1330-enums', async () => {
    const r = await call('test_elicitation_sep1330_enums');
    const p = asked[0].params.requestedSchema.properties;
    expectEqual('titledSingle.oneOf[0]', p.titledSingle.oneOf[0], { const: 'value1', title: 'First Option' });
    expectEqual('legacyEnum.enumNames', p.legacyEnum.enumNames, ['Option One', 'Option Two', 'Option Three']);
    expectEqual('untitledMulti.items', p.untitledMulti.items, { type: 'string', enum: ['option1', 'option2', 'option3'] });
    expectEqual('titledMulti.items.anyOf[1]', p.titledMulti.items.anyOf[1], { const: 'value2', title: 'Second Choice' });
    expectEqual('content', jsonAfter(r.text, 'Elicitation completed: action=accept, content='), ENUMS_ANSWER);
    return r.text;
  }],
  ['logging', async () => {
    requireCapability('logging');
    await client.setLoggingLevel('debug');
    logged.length = 0;
    const r = await call('test_tool_with_logging');
    // Sent while the call ran, so in before its result (a little grace for a
    // standalone stream).
    await new Promise((resolve) => setTimeout(resolve, 200));
    expectEqual('log messages', logged.map((p) => [p.level, p.data]), [
      ['info', 'Tool execution started'],
      ['info', 'Tool processing data'],
      ['info', 'Tool execution completed'],
    ]);
    if (r.text === '') throw new Error('no text');
    return `${logged.length} info messages, then ${JSON.stringify(r.text)}`;
  }],
  ['subscribe', async () => {
    requireCapability('resources.subscribe');
    const uri = 'test://watched-resource';
    expectEqual('subscribe', await client.subscribeResource({ uri }), {});
    expectEqual('unsubscribe', await client.unsubscribeResource({ uri }), {});
    return `subscribed to and unsubscribed from ${uri}`;
  }],
];

const only = process.env.LEGACY_TS_FLOWS
  ? process.env.LEGACY_TS_FLOWS.split(',')
  : ERA === 'auto'
    ? FLOWS.map(([n]) => n).filter((n) => !LEGACY_ONLY.includes(n))
    : null;
const unknown = (only ?? []).filter((n) => !FLOWS.some(([name]) => name === n));
if (unknown.length > 0) {
  console.error(`ts_client: unknown flow(s) ${unknown.join(', ')}; known: ${FLOWS.map(([n]) => n).join(', ')}`);
  process.exit(2);
}

let passed = 0;
let failed = 0;
try {
  await client.connect(transport);
  const era = client.getProtocolEra();
  const version = client.getNegotiatedProtocolVersion();
  if (era !== WANTED_ERA) throw new Error(`negotiated era ${era} (${version}), not ${WANTED_ERA}`);
  console.log(`# @modelcontextprotocol/client in the ${era} era, protocol ${version}`);
  const tools = new Set((await client.listTools()).tools.map((t) => t.name));
  for (const [name, run] of FLOWS.filter(([n]) => !only || only.includes(n))) {
    try {
      const text = await run();
      passed += 1;
      console.log(`ok   ${name}: ${text}`);
    } catch (e) {
      failed += 1;
      const missing = name.startsWith('test_') && !tools.has(name) ? ' (the server lists no such tool)' : '';
      console.log(`FAIL ${name}: ${e?.message ?? e}${missing}`);
    }
  }
} catch (e) {
  failed += 1;
  console.log(`FAIL connect: ${e?.message ?? e}`);
} finally {
  await client.close().catch(() => {});
}
console.log(`legacy-ts: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
