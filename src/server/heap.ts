import {setFlagsFromString} from 'node:v8'

/**
 * V8's heap growing factor in a serving process: the heap limit after each mark-compact is 3 x what survived it
 * (V8's own choice here is about 1.1 over a minimum step). A request leaves megabytes of ArrayBuffers (decoded
 * pixels, tensors) that only a mark-compact frees, and with V8's own factor a worker ran one every 3 requests or
 * so (Node 24 from the start, Node 20 after some 150 requests), each pausing the thread that receives, decodes and
 * answers; with 3, about one every 9 requests. Measured on 2 cores, Node 24 (bench/README.md): 4 clients on one
 * worker 0.87 -> 1.00 x one-at-a-time bare inference, one client's p90 46 -> 36 ms, for 20-75 MiB more in a
 * worker under load (about 3 MiB on Node 20).
 */
export const HEAP_GROWING_FLAG = '--heap-growing-percent=200'

/**
 * Sets HEAP_GROWING_FLAG for this process unless its node options already set a growing factor. V8 reads the
 * flag each time it sets a heap limit, so setting it once the process runs takes effect from the next mark-compact.
 */
export function growHeapForServing(nodeOptions: readonly string[] = process.execArgv, set: (flags: string) => void = setFlagsFromString): boolean {
  if (nodeOptions.some((option) => /heap[-_]growing[-_]percent/.test(option))) return false
  set(HEAP_GROWING_FLAG)
  return true
}
