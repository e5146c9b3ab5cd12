/**
 * Built-in detectors of contact details in read text: what moves a conversation off the platform. Each is
 * kept narrow so that ordinary text (dates, prices, abbreviations such as `St.John`) does not fire:
 * - `email`: name@domain.tld, also written `name (at) domain (dot) tld` or with `[at]`.
 * - `phone`: a number starting with + or 00 and 8 to 15 digits (E.164), or a national number of 10 to 15
 *   digits in groups separated by spaces, dots, dashes or brackets; never a run holding a date with its
 *   year (2024-01-15, 06.24.2008) or followed by `:` and a digit (a time), nor a book's number (after `ISBN`,
 *   or 13 digits from 978 or 979 whose check digit holds: the barcode number on every book cover), nor the
 *   numbers a receipt prints: `000…` (no country code starts with 0), and a number without `+` glued to
 *   letters (`CBP000709361664`) or right after a label naming another identifier (`GST Reg No. 001492992000`,
 *   `Slip No.: 0020070154`, `#002348863`), unless a phone word is nearer (`Tel No.`, `Tel0044…`).
 * - `url`: http(s):// or www. addresses, and bare domains under common top-level domains (example.com/path),
 *   also with their dots written defanged (`evil[.]com`, `evil(dot)com`).
 * - `handle`: messenger links (t.me/, telegram.me/, wa.me/, m.me/, discord.gg/, signal.me/, line.me/) and
 *   @names of 3 to 32 letters, digits, `_` or `.` that are not part of an e-mail address, nor digits and dots
 *   alone (`@10.00` is a price).
 */

export const CONTACT_DETECTORS = ['email', 'phone', 'url', 'handle'] as const
export type ContactDetector = (typeof CONTACT_DETECTORS)[number]

export interface ContactMatch {
  detector: ContactDetector
  start: number
  end: number
}

const TLDS =
  'com|net|org|info|biz|io|co|me|app|dev|xyz|online|site|shop|store|club|top|live|link|ru|de|uk|fr|es|it|nl|pl|br|in|cn|jp|us|ca|au|tv|cc|ly|gg|to|ws|su|ua|tk'

const AT = String.raw`(?:\s*@\s*|\s*[([]\s*at\s*[)\]]\s*)`
const DOT = String.raw`(?:\.|\s*[([]\s*dot\s*[)\]]\s*)`
/** A domain's dot, also written defanged: `evil[.]com`, `evil(.)com`, `evil[dot]com`, `evil (dot) com`. */
const URL_DOT = String.raw`(?:\.|\s*[([]\s*(?:\.|dot)\s*[)\]]\s*)`

const PATTERNS: Record<ContactDetector, RegExp> = {
  email: new RegExp(String.raw`[\p{L}\p{N}._%+-]+${AT}[\p{L}\p{N}-]+(?:${DOT}[\p{L}\p{N}-]+)*${DOT}\p{L}{2,24}(?![\p{L}\p{N}])`, 'giu'),
  phone: /(?<![\p{N}+])(?:\+|00)?\(?\d[\d\s().-]{6,22}\d(?![\p{L}\p{N}])/giu,
  url: new RegExp(
    String.raw`(?<![\p{L}\p{N}@.])(?:https?://[^\s]+|www\.[^\s]+|(?:[a-z0-9-]+${URL_DOT})+(?:${TLDS})(?![\p{L}\p{N}-])(?:/[^\s]*)?)`,
    'giu',
  ),
  handle: /(?<![\p{L}\p{N}.])(?:(?:t|telegram|wa|m|signal|line)\.me\/[\w+.-]+|discord\.gg\/[\w-]+|@[\p{L}\p{N}_.]{3,32})/giu,
}

/**
 * A digit run holding a date with its year, one separator repeated (2024-01-15, 15.01.2024, a camera's
 * 06.24.2008 17:59), is no phone number; spaces do not count, since they group phone numbers (+44 20 7946 0958).
 */
const DATE = /(?:^|\D)(?:\d{4}([-./])\d{1,2}\1\d{1,2}|\d{1,2}([-./])\d{1,2}\2\d{4})(?:\D|$)/

/** An ISBN-13: 978 or 979, then ten digits whose weighted sum (1, 3, 1, 3, ...) is a multiple of 10. */
function isbn13(digits: string): boolean {
  if (digits.length !== 13 || !/^97[89]/.test(digits)) return false
  let sum = 0
  for (let i = 0; i < 13; i++) sum += Number(digits[i]) * (i % 2 === 0 ? 1 : 3)
  return sum % 10 === 0
}

/**
 * The end of the text before a number when it names an identifier other than a phone number: a label (`No.`,
 * `ID`, `GST`, `VAT`, `Invoice#`, `Slip`, `Ref`, `Order`...) or `#`, then at most a short token (`POS: 04 CSH: `,
 * `Invoice# 1/A-`).
 */
const ID_LABEL =
  /(?:(?<![\p{L}])(?:no|nr|num|number|id|1d|reg|regn|gst|vat|tin|tax|invoice|inv|slip|receipt|rcpt|ref|order|acct|account|a\/c|card|pos|csh|cashier|trans|txn|batch|serial|s\/n|sku|item|code)(?![\p{L}])|#)[\s.:#\/\p{L}\p{N}-]{0,8}$/iu
/** A phone word up to two words before the number takes it back from a label (`Tel No.`, `Call centre no:`, `WhatsApp #`). */
const PHONE_WORD =
  /(?<![\p{L}])(?:tel|phone|mobile|mob|cell|contact|call|whats\s?app|sms|fax|hp|hotline|helpline|care|careline|enquiry|enquiries|inquiries)(?![\p{L}])[^\p{L}]*(?:\p{L}+[^\p{L}]*){0,2}$/iu

function phoneOk(found: string, before: string, after: string): boolean {
  const digits = found.replace(/\D/g, '')
  // Followed by `:59`, the last group is an hour.
  if (DATE.test(found) || /^:\d/.test(after)) return false
  if (/ISBN(?:-1[03])?:?\s*$/i.test(before) || isbn13(digits)) return false
  if (!found.startsWith('+') && (/\p{L}$/u.test(before) || ID_LABEL.test(before)) && !PHONE_WORD.test(before)) return false
  // After 00 come a country code, which never starts with 0, and a number.
  if (found.startsWith('00')) return !digits.startsWith('000') && digits.length >= 10 && digits.length <= 17
  if (found.startsWith('+')) return digits.length >= 8 && digits.length <= 15
  // A national number: 10 to 15 digits in at least two groups.
  return digits.length >= 10 && digits.length <= 15 && /[\s().-]/.test(found)
}

/** Trailing punctuation closes a sentence, not an address. */
function trimEnd(text: string, start: number, end: number): number {
  let e = end
  while (e > start && /[.,;:!?)\]'"]/.test(text[e - 1])) e--
  return e
}

/**
 * Contact details in `text`, left to right. Where detectors overlap, the most specific wins: a messenger link
 * over the URL it also is, an e-mail address over the @name inside it.
 */
export function findContacts(text: string, detectors: readonly ContactDetector[]): ContactMatch[] {
  const found: ContactMatch[] = []
  for (const detector of ['email', 'handle', 'url', 'phone'] as const) {
    if (!detectors.includes(detector)) continue
    for (const m of text.matchAll(PATTERNS[detector])) {
      const start = m.index
      let end = trimEnd(text, start, start + m[0].length)
      if (detector === 'phone') {
        end = start + m[0].trimEnd().length
        if (!phoneOk(text.slice(start, end), text.slice(Math.max(0, start - 24), start), text.slice(end))) continue
      }
      // An @ before digits and dots alone is a price (`Discount @10.00%`).
      if (detector === 'handle' && /^@[\d.]+$/.test(text.slice(start, end))) continue
      if (found.some((f) => start < f.end && end > f.start)) continue
      found.push({detector, start, end})
    }
  }
  return found.sort((a, b) => a.start - b.start)
}
