/** Numbers from what is typed in the form's inputs, never NaN. */

export function intValue(text: string, fallback = 0): number {
  const n = parseInt(text, 10);
  return Number.isFinite(n) ? n : fallback;
}

export function floatValue(text: string, fallback = 0): number {
  const n = parseFloat(text);
  return Number.isFinite(n) ? n : fallback;
}

/** A whole number of at least 0 (and at most `max`), for counts the form never lets go negative. */
export function countValue(text: string, max?: number): number {
  return Math.min(max ?? Infinity, Math.max(0, intValue(text, 0)));
}
