/**
 * A reader that stops early (`prospect api /api/… | head -1`) closes the pipe under the CLI: it
 * stops quietly, as git and gh do, with no stack trace on the terminal.
 */
import { fakeBackend, json } from '../support/fake-backend.js';
import { makeSandbox, type Sandbox } from '../support/run-cli.js';

describe('stdout closed by its reader', () => {
  let box: Sandbox;
  beforeEach(async () => (box = await makeSandbox()));
  afterEach(() => box.cleanup());

  it('prospect api into a pipe closed at once: exit 0, nothing on stderr', async () => {
    // Large enough to outlast any pipe buffer, so a write meets the closed pipe.
    const rows = Array.from({ length: 20_000 }, (_, i) => ({ id: i, name: `row ${i}` }));
    const backend = await fakeBackend({ 'GET /api/rows': (_req, _body, res) => json(res, 200, rows) });
    try {
      const run = await box.run(['api', '/api/rows'], {
        env: { PROSPECT_TOKEN: `prs_${'a'.repeat(43)}`, PROSPECT_API_BASE_URL: backend.url },
        onStarted: (child) => child.stdout!.destroy(),
      });
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    } finally {
      await backend.close();
    }
  });
});
