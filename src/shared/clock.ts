/** Source of the current time, injectable so tests can move it (README "Design" §9). */
export interface Clock {
  /** The current time. */
  now(): Date;
}

/** The system clock. */
export const systemClock: Clock = { now: () => new Date() };
