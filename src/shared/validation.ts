import { violationsError, type FieldViolation } from "./errors.js";

/**
 * Collects the violations of one request so that a caller learns every
 * broken rule at once; `check()` throws them as one invalid_argument
 * (see violationsError).
 */
export class Violations {
  readonly list: FieldViolation[] = [];

  /** Records that `field` breaks `rule` (for example "is required"). */
  add(field: string, rule: string): this {
    this.list.push({ field, description: rule });
    return this;
  }

  /** Records `rule` for `field` when `broken` is true. */
  addIf(broken: boolean, field: string, rule: string): this {
    return broken ? this.add(field, rule) : this;
  }

  /** Adds violations found elsewhere. */
  addAll(violations: readonly FieldViolation[]): this {
    this.list.push(...violations);
    return this;
  }

  /** @throws ConnectError invalid_argument when any violation was recorded. */
  check(): void {
    if (this.list.length > 0) throw violationsError(this.list);
  }
}

/** Length of `text` in characters (code points), as users count them. */
export function charLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** True when `value` is a lowercase UUID, as the service makes them. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
