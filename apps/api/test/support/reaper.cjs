// The test processes' reaper (process-cleanup.ts): started by a test process, it reads on stdin
// what that process started outside itself, one JSON line each ({"id":1,"kill":123},
// {"id":2,"run":["pg_ctl",…]}, {"id":1,"done":true}), and when stdin ends, because its parent
// exited in whatever way (an error, Ctrl-C, SIGTERM, SIGKILL), it kills and runs what is left.
const { spawnSync } = require('node:child_process');

const pending = new Map();
let buffered = '';
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => undefined); // outlive the Ctrl-C that ends the parent
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffered += chunk;
  let newline;
  while ((newline = buffered.indexOf('\n')) >= 0) {
    const line = buffered.slice(0, newline);
    buffered = buffered.slice(newline + 1);
    try {
      const message = JSON.parse(line);
      if (message.done) pending.delete(message.id);
      else pending.set(message.id, message);
    } catch {
      // A torn line from a parent killed mid-write: nothing to do with it.
    }
  }
});
process.stdin.on('close', () => {
  for (const cleanup of [...pending.values()].reverse()) {
    try {
      if (cleanup.kill) process.kill(cleanup.kill, 'SIGKILL');
      else if (cleanup.run) spawnSync(cleanup.run[0], cleanup.run.slice(1), { stdio: 'ignore', timeout: 15_000 });
    } catch {
      // Gone already.
    }
  }
  process.exit(0);
});
