import { Secret, TOTP } from 'otpauth';
import { Mailer } from '../../src/mail/mailer.js';
import type { SmtpSink } from './smtp-sink.js';
import type { TestApp } from './test-app.js';
import { postFrom, webClient, type WebClient } from './web-client.js';

/**
 * What a person does with mailed links and account pages, as form posts: one place for the
 * flows several specs walk (issue #37), each a step a person takes in a browser.
 */

/** The mailed link of `path` in the latest mail to `email` (waits for the mailer to finish sending). */
export async function latestLink(api: TestApp, smtp: SmtpSink, email: string, path: string): Promise<URL> {
  await api.app.get(Mailer).settled();
  const pattern = new RegExp(`^(http://\\S+${path.replace(/[/?]/g, (c) => `\\${c}`)}\\?\\S+)$`, 'm');
  for (const mail of smtp.to(email).reverse()) {
    const match = pattern.exec(mail.text);
    if (match) return new URL(match[1]!);
  }
  throw new Error(`no mail to ${email} holds a ${path} link`);
}

/** Asks "Forgot your password?" for `email` in a fresh browser. */
export async function askForReset(api: TestApp, email: string) {
  const web = webClient(api);
  const form = await web.send('GET', '/password/forgot');
  return web.send('POST', '/password/forgot', { _csrf: web.csrfFrom(form.text), email });
}

/** Opens a reset link and sets `password` with it; the form's answer (or the page's, when the link no longer works). */
export async function resetWith(web: WebClient, link: URL, password: string, options: { revokeTokens?: boolean } = {}) {
  const page = await web.send('GET', link.pathname + link.search);
  if (page.status !== 200) return page;
  return web.send('POST', '/password/reset', {
    _csrf: web.csrfFrom(page.text),
    token: link.searchParams.get('token')!,
    password,
    password_again: password,
    ...(options.revokeTokens ? { revoke_tokens: 'on' } : {}),
  });
}

/** An authenticator app's code for `key` (as the page shows it) at `at` (ms). */
export const totpCode = (key: string, at: number) => new TOTP({ secret: Secret.fromBase32(key.replace(/\s/g, '')), period: 30 }).generate({ timestamp: at });

/** Sets up an authenticator app in a signed-in browser (in sudo mode); its key. `now` gives the app's time. */
export async function enrolTotp(web: WebClient, now: () => number = Date.now): Promise<string> {
  const begun = await postFrom(web, '/settings/security', '/settings/security/totp');
  if (begun.status !== 200) throw new Error(`setting up an authenticator app answered ${begun.status}`);
  const key = /<code class="totp-key">([A-Z2-7 ]+)<\/code>/.exec(begun.text)![1]!;
  const done = await web.send('POST', '/settings/security/totp/confirm', { _csrf: web.csrfFrom(begun.text), code: totpCode(key, now()) });
  if (done.status !== 200) throw new Error(`confirming the authenticator app answered ${done.status}`);
  return key;
}
