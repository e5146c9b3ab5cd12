/**
 * What the text checks see of a payload. A code holds up to 7089 characters (a numeric QR code), while the text
 * rules' contact detectors, written for lines read in images, take time in the square of a line's length (some
 * 200 ms for a line of 4000 letters). So the checks see a payload's lines, each cut to MAX_LINE_CHARS, up to
 * MAX_CHECKED_CHARS in all: room for any address, e-mail address, phone number or phrase at the start of a line,
 * at a bounded cost.
 */
export const MAX_LINE_CHARS = 256
export const MAX_CHECKED_CHARS = 1024

/** The payload's lines as the text checks see them. */
export function checkedLines(payload: string): string[] {
  const lines: string[] = []
  let left = MAX_CHECKED_CHARS
  for (const line of payload.split(/\r\n|\r|\n/)) {
    if (left <= 0) break
    const kept = line.slice(0, Math.min(MAX_LINE_CHARS, left))
    lines.push(kept)
    left -= kept.length
  }
  return lines
}
