import sharp from 'sharp'

/** What libvips was asked to do while some work ran: pipelines run to a buffer (sharp's toBuffer) and headers read. */
export interface SharpRuns {
  pipelines: number
  headers: number
}

/** Counts the libvips pipelines and header reads `work` asks sharp for (a spy on sharp's prototype, removed after). */
export async function sharpRuns(work: () => Promise<unknown>): Promise<SharpRuns> {
  const proto = sharp.prototype as Record<'toBuffer' | 'metadata', (...args: unknown[]) => unknown>
  const original = {toBuffer: proto.toBuffer, metadata: proto.metadata}
  const runs: SharpRuns = {pipelines: 0, headers: 0}
  proto.toBuffer = function (this: unknown, ...args: unknown[]) {
    runs.pipelines++
    return original.toBuffer.apply(this, args)
  }
  proto.metadata = function (this: unknown, ...args: unknown[]) {
    runs.headers++
    return original.metadata.apply(this, args)
  }
  try {
    await work()
  } finally {
    Object.assign(proto, original)
  }
  return runs
}
