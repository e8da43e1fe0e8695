// What both ACP client scripts (test.mjs, editor.mjs) bound their waits with.

/** Bound on one step (a request, a wait for an update). */
export const STEP_TIMEOUT_MS = 20_000;

/** Ends the process with a failure when the whole script takes longer than `ms`. */
export function limitTotal(ms) {
  const overall = setTimeout(() => {
    console.error(`FAIL: the whole test took longer than ${ms} ms`);
    process.exit(1);
  }, ms);
  overall.unref();
}

/** `promise`, or a rejection naming `what` after `ms`. */
export function within(promise, what, ms = STEP_TIMEOUT_MS) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A promise with its `resolve` at hand. */
export function deferred() {
  let resolve;
  const promise = new Promise((r) => (resolve = r));
  return { promise, resolve };
}
