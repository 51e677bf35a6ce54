/**
 * The hooks every end-to-end spec of the built binary would otherwise repeat, in one place.
 * A spec calls useSandbox() or useRealApi() once at its top and imports `box`, `api` and
 * `person` from here: ES modules' live bindings, set by these hooks before each test runs
 * (jest gives each spec file its own instance of this module).
 */
import { assertBuilt, makeSandbox, type Sandbox } from './run-cli.js';
import { createUser, startRealApi, type TestApp } from './real-api.js';

/** The test's own config directory and environment (run-cli.ts makeSandbox), fresh for each test. */
export let box: Sandbox;
/** The real API of the spec file, on a fresh database (useRealApi). */
export let api: TestApp;
/** Grace Hopper, a person of that API (useRealApi). */
export let person: Awaited<ReturnType<typeof createUser>>;

/** A built binary and a fresh sandbox for each test. */
export function useSandbox(): void {
  beforeAll(assertBuilt);
  beforeEach(async () => (box = await makeSandbox()));
  afterEach(() => box.cleanup());
}

/**
 * useSandbox(), and the real API for the whole file with one person in it; `tag` keeps her
 * e-mail address apart from other files' (TEST_DATABASE_URL may be one database for all); `env`,
 * settings of the API the spec needs.
 */
export function useRealApi(tag: string, env: Record<string, string> = {}): void {
  beforeAll(async () => {
    assertBuilt();
    api = await startRealApi(env);
    person = await createUser(api, { name: 'Grace Hopper', email: `grace-${tag}-${Date.now()}@example.com` });
  });
  afterAll(() => api?.close());
  beforeEach(async () => (box = await makeSandbox()));
  afterEach(() => box.cleanup());
}
