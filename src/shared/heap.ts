import v8 from "node:v8";

/**
 * Sets how far V8 lets the old generation grow past the live heap of its
 * last full collection before it collects again: by `percent` (V8's
 * --heap-growing-percent; 0 is V8's default: its own heuristics). Called once when the
 * service starts; V8 reads the flag at each full collection, so it takes
 * effect from the next one.
 *
 * Why: under load (a webhook backlog draining at 3,000 deliveries/s, sends,
 * key checks) many short-lived objects outlive two young-generation
 * collections and die in the old generation; V8's default factor (up to 4
 * for a fast-allocating heap) then let a live heap of 55–80 MiB take an RSS
 * of 380–440 MiB before a full collection. At 30% (measured in `npm run
 * bench`, same machine): the 100,000-delivery backlog drains at 3,135/s
 * with a peak of 225 MiB (379–400 MiB at 2,900–3,500/s before), sends peak
 * at 231–238 MiB (280–361), GET /v1/me at 208–242 MiB (223–437), at the
 * same ratios to the trivial handler.
 */
export function tuneHeap(percent: number): void {
  v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
