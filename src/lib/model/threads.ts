/** How many onnxruntime intra-op threads suit this machine. */
import {readdir, readFile} from 'node:fs/promises'
import {availableParallelism} from 'node:os'

async function readText(path: string): Promise<string | undefined> {
  try {
    return (await readFile(path, 'utf8')).trim()
  } catch {
    return undefined
  }
}

/** Physical cores on Linux (hyper-threads share one core's arithmetic units, so they add little to matrix work). */
async function physicalCores(): Promise<number | undefined> {
  let cpus: string[]
  try {
    cpus = (await readdir('/sys/devices/system/cpu')).filter((n) => /^cpu\d+$/.test(n))
  } catch {
    return undefined
  }
  const cores = new Set<string>()
  for (const cpu of cpus) {
    const base = `/sys/devices/system/cpu/${cpu}/topology`
    const [pkg, core] = await Promise.all([readText(`${base}/physical_package_id`), readText(`${base}/core_id`)])
    if (pkg === undefined || core === undefined) return undefined
    cores.add(`${pkg}:${core}`)
  }
  return cores.size || undefined
}

/** A cgroup v2 CPU quota (containers): "max 100000" is none, "200000 100000" is two CPUs. */
async function cgroupCpus(): Promise<number | undefined> {
  const text = await readText('/sys/fs/cgroup/cpu.max')
  const [quota, period] = text?.split(/\s+/) ?? []
  if (!quota || quota === 'max' || !period) return undefined
  const n = Number(quota) / Number(period)
  return Number.isFinite(n) && n > 0 ? Math.ceil(n) : undefined
}

/**
 * The smallest of: CPUs this process may run on, physical cores, and the container's CPU quota. Oversubscribing
 * threads on a small or shared machine makes onnxruntime slower, not faster.
 */
export async function defaultThreads(): Promise<number> {
  const limits = [availableParallelism(), await physicalCores(), await cgroupCpus()]
  return Math.max(1, Math.min(...limits.filter((n): n is number => n !== undefined)))
}
