/**
 * slow-uploads: the slow-upload attack on upload places at full size, against a real `mod serve --workers 1` with
 * its default limits (130 upload places, 32 per client, MOD_BODY_TIMEOUT_MS 30 s, MOD_BODY_MIN_RATE 8 KiB/s): five
 * attacking addresses x 27 connections, each sending the head of an upload and then one byte every 10 s and
 * reconnecting as soon as it is answered (after 1 s when refused), while a sixth address sends 36 small uploads,
 * one a second, starting once the attack holds its places. Prints the share of the 36 answered 200 (target: at
 * least 95%), what the attack's connections were answered and its traffic in bytes per second.
 *
 * `--rate B` makes each attacking connection keep B bytes per second instead (sent a tenth every 100 ms, the body
 * declared 1 MB and ended once all sent): `--rate 12000` is above the minimum rate, so no body trickles, and only
 * the fair share of upload places between addresses lets the sixth one in. `--per-address N` (default 27) changes
 * the connections per attacking address and `--places N` sets MOD_MAX_UPLOADS (a quarter of it per address), for a
 * smaller run: `--rate 12000 --per-address 7 --places 30` is the same attack on a server of 30 places.
 *
 * IPv4 (default): the attackers are 127.0.0.2-6, the client 127.0.0.7, the server 127.0.0.1. With `--ipv6` the
 * script runs itself again in a network namespace of its own (`unshare -rn`, no root needed) with test addresses on
 * lo: the attackers are five /64s of one /56 (2001:db8:0:1::1 to 2001:db8:0:5::1), the client 2001:db8:1:7::7.
 * Uses the test suite's toy model (`npm run fixtures`): the figure is about admission, not inference.
 *
 *   node --import tsx bench/slow-uploads.ts [--ipv6] [--rate 12000] [--per-address 27] [--places 130]
 */
import './no-telemetry.js'

import {spawnSync} from 'node:child_process'
import {join} from 'node:path'

import {solidPng} from '../test/helpers/cli.js'
import {servedShare, trickleAttack, uploads} from '../test/helpers/slow-attack.js'
import {header, ROOT, saveResults, startServer, verdict} from './lib.js'

const ADDRESSES = {
  ipv4: {host: '127.0.0.1', legit: '127.0.0.7', attackers: ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6']},
  ipv6: {host: '2001:db8:ffff::1', legit: '2001:db8:1:7::7', attackers: [1, 2, 3, 4, 5].map((n) => `2001:db8:0:${n}::1`)},
}
const UPLOADS = 36
const TARGET = 0.95

/** The value after `name` on the command line, as a whole number >= 1; `fallback` when absent. */
function option(name: string, fallback?: number): number | undefined {
  const at = process.argv.indexOf(name)
  if (at === -1) return fallback
  const value = Number(process.argv[at + 1])
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} needs a whole number >= 1`)
  return value
}

const PER_ADDRESS = option('--per-address', 27) as number
const PLACES = option('--places')
const RATE = option('--rate')
// A trickle is a byte every 10 s; a rate is sent a tenth every 100 ms.
const EVERY_MS = RATE === undefined ? 10_000 : 100
const BYTES = RATE === undefined ? 1 : Math.ceil(RATE / 10)
const pace = RATE === undefined ? `trickling a byte every ${EVERY_MS / 1000} s` : `at ${RATE} bytes/s each`

const ipv6 = process.argv.includes('--ipv6')
const family = ipv6 ? 'ipv6' : 'ipv4'
const {host, legit, attackers} = ADDRESSES[family]

if (ipv6 && process.env.MOD_BENCH_NETNS !== '1') {
  // Again, inside a network namespace where the test addresses are on lo.
  const add = [host, legit, ...attackers].map((a) => `ip -6 addr add ${a}/128 dev lo nodad`).join(' && ')
  const run = spawnSync('unshare', ['-rn', 'sh', '-c', `ip link set lo up && ${add} && exec "$0" --import tsx "$@"`, process.execPath, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: {...process.env, MOD_BENCH_NETNS: '1'},
  })
  process.exit(run.status ?? 1)
}

header('slow-uploads', `${attackers.length} addresses x ${PER_ADDRESS} connections ${pace} against ${UPLOADS} uploads from another address (${family})`)
const served = await startServer(['--workers', '1', '--host', host], {
  MOD_MODEL_DIR: join(ROOT, 'test', 'fixtures', 'models', 'toy'),
  ...(PLACES === undefined ? {} : {MOD_MAX_UPLOADS: String(PLACES)}),
})
const url = `${served.url}/v1/moderate`
const attack = trickleAttack({url, addresses: attackers, perAddress: PER_ADDRESS, everyMs: EVERY_MS, bytes: BYTES, retryMs: 1000})
const started = Date.now()
try {
  // The attack's heads are in within moments; its bodies trickle (or show their pace) once their grace (1 s) is over.
  await new Promise((resolve) => setTimeout(resolve, 3000))
  process.stdout.write(`attack: ${attack.open} connections open after 3 s (${PLACES ?? 130} upload places, ${Math.max(1, Math.floor((PLACES ?? 130) / 4))} per address)\n`)
  const statuses = await uploads(url, {from: legit, count: UPLOADS, data: await solidPng(0, 0, 255, 16, 16), gapMs: 1000})
  const seconds = (Date.now() - started) / 1000
  const share = servedShare(statuses)
  const counts: Record<string, number> = {}
  for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1
  process.stdout.write(`client ${legit}: ${JSON.stringify(counts)} over ${UPLOADS} uploads\n`)
  process.stdout.write(`attack answers: ${JSON.stringify(attack.answers)}; ${attack.open} connections open at the end\n`)
  process.stdout.write(`attack traffic: ${attack.sent} bytes in ${seconds.toFixed(1)} s = ${(attack.sent / seconds).toFixed(0)} bytes/s (heads included)\n\n`)
  const name = RATE === undefined ? family : `${family}-${RATE}Bps`
  const v = verdict('slow-uploads', name, `uploads of a sixth address answered 200 during the attack (${name})`, share, 'min', TARGET, '', 3)
  await saveResults(`slow-uploads-${name}`, [v], {statuses, attack: attack.answers, attackBytes: attack.sent, seconds, perAddress: PER_ADDRESS, rate: RATE ?? null})
} finally {
  attack.stop()
  await served.stop()
}
