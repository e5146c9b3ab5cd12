/**
 * How long `GET /health` takes to answer while some other request is in flight: asked again and again, `pause`
 * ms apart, until `work` settles. A server whose event loop is held (a model or a decoder run on it) answers late.
 * The asking runs in a process of its own: asked from the server's own process, no question would start while its
 * event loop is held, and every answer would look prompt.
 */
import {spawn} from 'node:child_process'

const POLLER = `
const [base, pause] = process.argv.slice(1)
let stop = false
process.stdin.on('data', () => (stop = true)).resume()
const waits = []
while (!stop) {
  const asked = performance.now()
  const r = await fetch(base + '/health')
  await r.arrayBuffer()
  if (r.status !== 200) throw new Error('/health answered ' + r.status)
  waits.push(performance.now() - asked)
  await new Promise((resolve) => setTimeout(resolve, Number(pause)))
}
process.stdout.write(JSON.stringify(waits))
process.exit(0)
`

export async function healthWaitsWhile<T>(base: string, work: Promise<T>, pause: number): Promise<{result: T; waits: number[]}> {
  const poller = spawn(process.execPath, ['--input-type=module', '-e', POLLER, base, String(pause)], {stdio: ['pipe', 'pipe', 'inherit']})
  let out = ''
  poller.stdout.on('data', (d: Buffer) => (out += d))
  const ended = new Promise<number | null>((resolve) => poller.on('close', resolve))
  const settled = await Promise.allSettled([work])
  poller.stdin.end('stop\n')
  const code = await ended
  if (code !== 0) throw new Error(`the /health poller ended with ${code}: ${out}`)
  const [r] = settled
  if (r.status === 'rejected') throw r.reason
  return {result: r.value, waits: JSON.parse(out) as number[]}
}
