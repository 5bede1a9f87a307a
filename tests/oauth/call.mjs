// `mrtr call` as the OAuth end-to-end tests run it: one child process, its
// output collected, and the login URL it prints handed to a browser stand-in.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';

/**
 * Runs `BIN call ARGS` with `MRTR_TOKEN_CACHE` set to `tokenCache`; when it prints
 * a login URL, `browser(url)` plays the user. The child joins `children` (so the
 * caller can kill what is left). Resolves, once the child has closed and the
 * login (if any) has settled, to { code, stdout, stderr, loggedIn, browsed }:
 * `browsed` is what `browser` resolved to, or the error it threw.
 */
export function mrtrCall(bin, args, { tokenCache, children, browser, env = {} }) {
  const child = spawn(bin, ['call', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, MRTR_TOKEN_CACHE: tokenCache, ...env },
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  let login = null;
  child.stdout.setEncoding('utf8').on('data', (c) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c) => {
    stderr += c;
    const m = stderr.match(/^ {2}(http:\/\/\S+)$/m);
    if (m && !login) {
      assert.ok(browser, `mrtr call asked for a login nobody plays:\n${stderr}`);
      login = Promise.resolve()
        .then(() => browser(m[1]))
        .catch((e) => e);
    }
  });
  return new Promise((resolve) => {
    child.on('close', async (code) => {
      const browsed = login ? await login : undefined;
      resolve({ code, stdout, stderr, loggedIn: login !== null, browsed });
    });
  });
}
