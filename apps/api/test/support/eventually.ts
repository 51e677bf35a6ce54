import { scaledTimeout } from './process-cleanup.js';

/** Waits (bounded, the bound scaled to the machine's load) until `check` holds; the bound is the staleness a test allows and more. Answers whether it held. */
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 3_000): Promise<boolean> {
  const until = Date.now() + scaledTimeout(timeoutMs);
  while (Date.now() < until) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

/** Waits like `eventually`, and throws naming `what` when it never held: for a step a test cannot go on without. */
export async function waitFor(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  if (!(await eventually(condition, timeoutMs))) throw new Error(`timed out waiting for ${what}`);
}
