/**
 * The runs of a job in this process, for a graceful stop: after stop() no
 * new run begins (the job's record stays for the next worker or the sweep),
 * and stop() resolves once the runs already begun have ended.
 */
export interface RunTracker {
  /** Runs `work` unless stopping (then resolves at once without running it). */
  run(work: () => Promise<void>): Promise<void>;
  /** Refuses new runs and waits for the ones in progress (their failures are theirs to report). */
  stop(): Promise<void>;
}

/** Creates a RunTracker. */
export function createRunTracker(): RunTracker {
  const running = new Set<Promise<void>>();
  let stopping = false;
  return {
    async run(work) {
      if (stopping) return;
      const run = work();
      running.add(run);
      try {
        await run;
      } finally {
        running.delete(run);
      }
    },
    async stop() {
      stopping = true;
      await Promise.allSettled(running);
    },
  };
}
