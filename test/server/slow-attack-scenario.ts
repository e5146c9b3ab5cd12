// The slow-upload attack at a small scale, against an in-process server: slow-attack.test.ts runs it on IPv4
// loopback addresses, and through slow-attack-namespace.ts in a network namespace of its own for IPv6.
import {mkdtempSync, rmSync} from 'node:fs'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {buildServer} from '../../src/server/app.js'
import {trickleAttack, uploads} from '../helpers/slow-attack.js'
import {brokenAnswers, fakeEngine, testSettings, until} from './harness.js'

/** Upload places of the server under attack; each attacking address may hold up to a third of them. */
const PLACES = 10

export interface Outcome {
  /** The statuses the legitimate client's uploads got. */
  statuses: number[]
  /** The statuses the attack's connections got. */
  attack: Record<string, number>
}

/**
 * `perAddress` connections (at most 3) from each attacking address, each holding an upload place with `bytes` (default
 * 1) every 100 ms (10 bytes/s against the default minimum rate of 8 KiB/s; 2000 keeps well above it) and reconnecting once
 * answered; once they hold every place, `legit` sends 40 small uploads, 20 ms apart. MOD_BODY_TIMEOUT_MS is 3 s, so
 * the attack's trickling bodies would hold their places for 3 s each, and those that keep the pace for minutes.
 */
export async function attackScenario(host: string, legit: string, attackers: string[], perAddress: number, bytes = 1): Promise<Outcome> {
  const dir = mkdtempSync(join(tmpdir(), 'mod-slow-attack-'))
  const settings = testSettings(join(dir, 'cache'), {limits: {maxUploads: PLACES, maxUploadsPerClient: 3, bodyTimeoutMs: 3000}})
  const broken = brokenAnswers()
  const server = buildServer(fakeEngine(), settings, {log: () => {}, tmpDir: join(dir, 'uploads'), brokenAnswer: broken.brokenAnswer})
  await new Promise<void>((resolve) => server.server.listen(0, host, resolve))
  const {port} = server.server.address() as AddressInfo
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}/v1/moderate`
  const attack = trickleAttack({url, addresses: attackers, perAddress, everyMs: 100, bytes, retryMs: 50})
  try {
    await until(() => server.gate.receiving === PLACES)
    // Past the grace of a new body (1 s): every place is held by a body that trickles, or keeps the pace.
    await new Promise((resolve) => setTimeout(resolve, 1100))
    const statuses = await uploads(url, {from: legit, count: 40, data: Buffer.from('x'), gapMs: 20})
    return {statuses, attack: {...attack.answers}}
  } finally {
    attack.stop()
    await server.close()
    rmSync(dir, {recursive: true, force: true})
    broken.check()
  }
}
