/**
 * How long `GET /health` takes to answer while some other request is in flight: asked again and again, `pause`
 * ms apart, until `work` settles. A server whose event loop is held (a model or a decoder run on it) answers late.
 */
import * as assert from 'uvu/assert'

export async function healthWaitsWhile<T>(base: string, work: Promise<T>, pause: number): Promise<{result: T; waits: number[]}> {
  let done = false
  void work.finally(() => (done = true)).catch(() => {})
  const waits: number[] = []
  while (!done) {
    const asked = performance.now()
    assert.is((await fetch(`${base}/health`)).status, 200)
    waits.push(performance.now() - asked)
    await new Promise((resolve) => setTimeout(resolve, pause))
  }
  return {result: await work, waits}
}
