import type { Timing } from '../../src/device-login/device-login-client.js';

/** Time that moves only when the client sleeps, from `start`: the tests never wait for real, and every sleep is recorded. */
export function fakeTiming(start = 1_000_000) {
  let now = start;
  const sleeps: number[] = [];
  const timing: Timing = {
    now: () => now,
    sleep: async (ms) => {
      sleeps.push(ms);
      now += ms;
    },
  };
  return { timing, sleeps };
}
