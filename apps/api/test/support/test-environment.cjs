// jest's node environment, with one addition for the test processes that are jest workers: a worker
// whose jest is gone ends itself, so its reaper (reaper.cjs) ends what the running file started.
//
// With workerIdleMemoryLimit (jest.config.js) jest runs every file in a worker, even a single one.
// A SIGTERM or SIGKILL to jest alone (not to its process group, as Ctrl-C is) ends jest and not its
// workers: the orphaned worker went on running its file, so the pipe to its reaper stayed open and
// the API processes and Postgres clusters the file had started outlived the run
// (test/harness/interrupt.e2e-spec.ts). A worker talks to jest over an IPC channel; when jest dies,
// however it dies, the channel closes and the worker's real `process` (this module runs outside
// the test's sandbox, whose `process` receives no such events) emits 'disconnect'. Run in band,
// jest is the test process itself and has no channel: nothing to watch, the reaper sees it end.
const { TestEnvironment } = require('jest-environment-node');

// Only while a file runs: a 'disconnect' listener holds the channel open (Node refs it for one), and
// a worker told to end by jest is meant to exit once jest-worker drops its own listener; between
// files nothing started by a file is left to end.
const exitWithJest = () => process.exit(1);

class TestEnvironmentEndingWithJest extends TestEnvironment {
  async setup() {
    await super.setup();
    // What the worker would finish is a test whose result nobody reads; its exit closes the
    // reaper's stdin.
    if (process.send) process.once('disconnect', exitWithJest);
  }

  async teardown() {
    process.off('disconnect', exitWithJest);
    await super.teardown();
  }
}

module.exports = TestEnvironmentEndingWithJest;
