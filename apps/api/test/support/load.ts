/**
 * Requests in `parallel` loops until `stop` is called, each loop waiting `pauseMs` between two:
 * load on a running API while a test breaks something under it. `answers` fills as they come;
 * `stop` resolves with all of them once every loop has finished its last request.
 */
export function load<T>(parallel: number, next: () => Promise<T>, pauseMs = 0) {
  const answers: T[] = [];
  let running = true;
  const done = Promise.all(
    Array.from({ length: parallel }, async () => {
      while (running) {
        answers.push(await next());
        if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
      }
    }),
  );
  return {
    answers,
    stop: async () => {
      running = false;
      await done;
      return answers;
    },
  };
}
