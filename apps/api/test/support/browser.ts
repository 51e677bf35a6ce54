import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';

/** Screenshots of every page the tests visit, for a person to look at. */
export const SCREENSHOTS = fileURLToPath(new URL('../../test-output/screenshots/', import.meta.url));

/** Debian's Chromium (installed by .ci/run), headless, with no network of its own. */
export async function launchBrowser(): Promise<Browser> {
  await mkdir(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

/**
 * Fills in the sign-up form in `page` (on /signup, or on /login, which offers it), and waits until
 * the browser has left it, so the session cookie is set before the test goes anywhere else. A
 * refused sign-up stays on /signup: its page says why, and the failure shows it.
 */
export async function signUpInPage(page: Page, person: { name: string; email: string; password: string }): Promise<void> {
  if (!new URL(page.url()).pathname.startsWith('/signup')) await page.click('text=Create one');
  await page.getByLabel('Name').fill(person.name);
  await page.getByLabel('E-mail').fill(person.email);
  await page.getByLabel('Password').fill(person.password);
  const left = page.waitForURL((url) => url.pathname !== '/signup').catch(async (err: unknown) => {
    throw new Error(`${String(err)}\n${await page.locator('main').innerText()}`);
  });
  await Promise.all([left, page.getByRole('button', { name: 'Create account' }).click()]);
}
