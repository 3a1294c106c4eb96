/** The rule a phone number must meet, as said in errors. */
export const PHONE_NUMBER_RULE = "must be 8 to 15 digits with country code, without '+', spaces or a leading 0";

/**
 * True when `value` is a phone number as the spec writes them: digits only
 * with country code (E.164 without "+"), 8 to 15 digits, not starting with 0.
 */
export function isPhoneNumber(value: string): boolean {
  return /^[1-9]\d{7,14}$/.test(value);
}
