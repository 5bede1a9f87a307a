// A headless "browser" playing the user of tests/oauth/provider.mjs: it follows
// an authorization URL through the provider (keeping cookies, following
// redirects by hand), signs in, allows the consent, and then either calls the
// client's redirect URI (default) or prints the code and state (--no-follow).
//
//   node tests/oauth/browser.mjs --user alice [--password PW] AUTHORIZATION_URL
//       prints `ok` once the client's callback answered 2xx (never the code)
//   node tests/oauth/browser.mjs --user bob --no-follow AUTHORIZATION_URL
//       prints {"code":"...","state":"...","iss":"..."} and calls nothing
//   --deny   refuse the consent instead (the client then gets error=access_denied)
// Exit status 1 with a message on stderr on any failure, including an error
// response from the provider (delivered to the callback first unless --no-follow).
// The password defaults to USER-password (the provider's test users).
//
// As a module: `authorize(url, { user, password, follow, deny, provider })`
// resolves to { redirect, code, state, iss } or throws. `provider` is the
// provider's origin when the URL starts elsewhere (a server that redirects the
// browser on to it, as in a mix-up): redirects before the provider are followed.
import { pathToFileURL } from 'node:url';

// Cookies of the provider's origin, by name and path.
class Jar {
  #cookies = new Map();

  store(res, url) {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      let cpath = url.pathname.replace(/\/[^/]*$/, '') || '/';
      let expired = false;
      for (const attr of attrs) {
        const [k, v = ''] = attr.split('=').map((x) => x.trim());
        if (/^path$/i.test(k)) cpath = v || '/';
        if (/^max-age$/i.test(k) && Number(v) <= 0) expired = true;
        if (/^expires$/i.test(k) && Date.parse(v) < Date.now()) expired = true;
      }
      const key = `${name}\0${cpath}`;
      if (expired) this.#cookies.delete(key);
      else this.#cookies.set(key, { name, value, path: cpath });
    }
  }

  header(url) {
    const p = url.pathname;
    return [...this.#cookies.values()]
      .filter((c) => p === c.path || p.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`))
      .map((c) => `${c.name}=${c.value}`).join('; ');
  }
}

const text = (html) => html.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 500);

// The forms of an HTML page: [{ action, fields: Map(name -> value) }].
function forms(html) {
  return [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)].map(([, attrs, body]) => ({
    action: /\baction="([^"]*)"/i.exec(attrs)?.[1].replace(/&amp;/g, '&') ?? '',
    fields: new Map([...body.matchAll(/<input\b([^>]*)>/gi)].map(([, a]) => [
      /\bname="([^"]*)"/i.exec(a)?.[1], /\bvalue="([^"]*)"/i.exec(a)?.[1] ?? '',
    ]).filter(([n]) => n)),
  }));
}

export async function authorize(authorizationUrl, { user, password, follow = true, deny = false, provider } = {}) {
  if (!user) throw new Error('no user given');
  password ??= `${user}-password`;
  const origin = provider ?? new URL(authorizationUrl).origin;
  const jar = new Jar();
  let url = new URL(authorizationUrl);
  let method = 'GET';
  let body;
  let reached = url.origin === origin;
  for (let step = 0; step < 20; step++) {
    if (!reached && url.origin !== origin) {
      // Not at the provider yet: another server sends the browser on.
      const res = await fetch(url, { redirect: 'manual' });
      await res.arrayBuffer();
      const location = res.headers.get('location');
      if (res.status < 300 || res.status >= 400 || !location) {
        throw new Error(`${url.origin}${url.pathname} answered ${res.status} before the provider`);
      }
      url = new URL(location, url);
      continue;
    }
    reached = true;
    if (url.origin !== origin) {
      // Left the provider: this is the redirect to the client.
      const params = url.searchParams;
      const result = { redirect: url.href, code: params.get('code'), state: params.get('state'), iss: params.get('iss') };
      const error = params.get('error');
      if (follow) {
        const res = await fetch(url, { redirect: 'manual' });
        await res.arrayBuffer();
        if (!error && !res.ok) throw new Error(`the client's callback ${url.origin}${url.pathname} answered ${res.status}`);
      }
      if (error) throw new Error(`the provider redirected with error=${error}: ${params.get('error_description') ?? ''}`);
      if (!result.code) throw new Error(`redirected to ${url.origin}${url.pathname} without a code`);
      return result;
    }
    const headers = { cookie: jar.header(url), accept: 'text/html' };
    if (body) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await fetch(url, { method, headers, body, redirect: 'manual' });
    jar.store(res, url);
    const html = await res.text();
    if (res.status >= 300 && res.status < 400) {
      const location = res.headers.get('location');
      if (!location) throw new Error(`${res.status} without Location from ${url.pathname}`);
      url = new URL(location, url);
      method = 'GET';
      body = undefined;
      continue;
    }
    if (res.status !== 200) throw new Error(`${method} ${url.pathname} answered ${res.status}: ${text(html)}`);
    const found = forms(html);
    const login = found.find((f) => f.fields.has('password'));
    let form;
    if (login) {
      if (body) throw new Error(`login as ${user} failed: ${text(/class="error">([^<]*)/.exec(html)?.[1] ?? html)}`);
      login.fields.set('login', user).set('password', password);
      form = login;
    } else {
      form = found.find((f) => /\/(abort|deny)/i.test(f.action) === deny);
      if (!form) throw new Error(`no form to submit on ${url.pathname}: ${text(html)}`);
    }
    url = new URL(form.action, url);
    method = 'POST';
    body = new URLSearchParams([...form.fields]).toString();
  }
  throw new Error('too many steps through the provider');
}

async function main(argv) {
  const opts = { follow: true };
  let url;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--user' || a === '--password') opts[a.slice(2)] = argv[++i];
    else if (a === '--no-follow') opts.follow = false;
    else if (a === '--deny') opts.deny = true;
    else if (a.startsWith('-')) throw new Error(`unknown option ${a}`);
    else url = a;
  }
  if (!url || !opts.user) throw new Error('usage: browser.mjs --user NAME [--password PW] [--no-follow] [--deny] AUTHORIZATION_URL');
  const { code, state, iss } = await authorize(url, opts);
  console.log(opts.follow ? 'ok' : JSON.stringify({ code, state, iss }));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(process.argv.slice(2)).catch((err) => {
    console.error(`browser.mjs: ${err.message}`);
    process.exit(1);
  });
}
