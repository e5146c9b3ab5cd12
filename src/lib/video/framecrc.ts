/** Longest line we keep across chunks; framecrc lines are under 100 characters. */
const MAX_LINE = 1024

export interface PacketClock {
  /** Feeds the next bytes of ffmpeg's framecrc output. */
  push(chunk: Buffer): void
  /** End time in seconds of the latest packet seen (pts + duration), or undefined before the first one. */
  end(): number | undefined
  /**
   * Seconds of video the packets seen so far cover, from the earliest one's start (a stream need not start at
   * 0, e.g. MPEG-TS), or undefined before the first one.
   */
  span(): number | undefined
  /** Packets seen so far, those without a timestamp included. */
  packets(): number
  /** Per stream listed (each `#tb` line), in order: its packets seen so far. */
  streamPackets(): number[]
}

/**
 * Reads the `framecrc` listing that ffmpeg writes for the video streams' packets (one line per packet:
 * `stream, dts, pts, duration, size, checksum`, after a `#tb <stream>: num/den` time base line per stream). The
 * packets actually read give the streams' real duration, whatever the container's header claims: the latest end
 * of any stream, and the span from the earliest start of any.
 */
export function createPacketClock(): PacketClock {
  let carry = ''
  /** Per stream of the listing. */
  const timeBases = new Map<string, number>()
  const perStream = new Map<string, number>()
  let end: number | undefined
  let start: number | undefined
  let packets = 0

  function line(text: string): void {
    const tb = /^#tb (\d+): (\d+)\/(\d+)$/.exec(text)
    if (tb) {
      timeBases.set(tb[1], Number(tb[2]) / Number(tb[3]))
      perStream.set(tb[1], perStream.get(tb[1]) ?? 0)
      return
    }
    const fields = text.split(',')
    const timeBase = timeBases.get(fields[0])
    if (timeBase === undefined || fields.length < 4) return
    packets++
    perStream.set(fields[0], (perStream.get(fields[0]) ?? 0) + 1)
    const pts = Number(fields[2])
    const duration = Number(fields[3])
    // Packets without a timestamp are printed as a huge negative number: skip them.
    if (!Number.isFinite(pts) || !Number.isFinite(duration) || pts < 0 || duration < 0) return
    const t = (pts + duration) * timeBase
    if (end === undefined || t > end) end = t
    if (start === undefined || pts * timeBase < start) start = pts * timeBase
  }

  return {
    push(chunk) {
      const lines = (carry + chunk.toString('latin1')).split('\n')
      carry = lines.pop() ?? ''
      if (carry.length > MAX_LINE) carry = ''
      for (const text of lines) line(text.trim())
    },
    end: () => end,
    span: () => (end === undefined || start === undefined ? undefined : end - start),
    packets: () => packets,
    streamPackets: () => [...perStream.values()],
  }
}
