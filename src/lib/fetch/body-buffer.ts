/**
 * How many bytes of a response body undici may hold unread before it stops reading the connection (its
 * `highWaterMark`; 64 KiB by default). undici 7 aborts the whole process (an assertion, `assert(!this.paused)`, in
 * its parser's finish) when a server that closes its connection after the body does so while reading is stopped:
 * a download written to disk more slowly than it arrives, a client consuming a body slowly. Room for 64 MiB keeps
 * reading going whatever the consumer's pace on every body this size or smaller (the images and answers mod fetches
 * are far smaller; a model file is written at disk speed), and costs memory only while the consumer lags.
 */
export const BODY_BUFFER_BYTES = 64 * 1024 * 1024
