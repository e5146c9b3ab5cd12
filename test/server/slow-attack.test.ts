// Clients that hold every upload place by trickling bytes from several addresses, each within its own per-client
// cap, on real sockets: a client sending at a normal pace from another address still gets its answers, because a
// body that trickles gives its place up to it. IPv4 on loopback addresses (the whole 127/8 reaches a server on
// 127.0.0.1); IPv6 in a network namespace of its own (`unshare -rn`), where test addresses can be put on lo.
import {spawnSync} from 'node:child_process'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {createGate} from '../../src/server/queue.js'
import {ROOT} from '../helpers/cli.js'
import {servedShare, trickleAttack} from '../helpers/slow-attack.js'
import {testUnless} from '../helpers/skip.js'
import {nodeArgs} from '../helpers/ts-script.js'
import {fakeEngine, rawError, rawRequest, multipartParts, start, tempDir, testSettings, until} from './harness.js'
import {attackScenario, type Outcome} from './slow-attack-scenario.js'

const dir = tempDir('mod-server-attack-')

test.after(() => dir.remove())

/** An answered single-byte upload from `from`. */
function send(base: string, from: string) {
  const {head, tail, type} = multipartParts('file', 'normal.png')
  const body = Buffer.concat([head, Buffer.from('x'), tail])
  return rawRequest(`${base}/v1/moderate`, {headers: {'content-type': type, 'content-length': body.length}, localAddress: from}, (req) => req.end(body))
}

test('5 addresses holding every upload place with a byte every 100 ms cannot keep a client of a sixth IPv4 address out', async () => {
  const attackers = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6']
  const {statuses, attack} = await attackScenario('127.0.0.1', '127.0.0.7', attackers, 3)
  assert.ok(servedShare(statuses) >= 0.95, `served ${statuses.filter((s) => s === 200).length} of ${statuses.length}: ${statuses.join(' ')}`)
  // The places the client got were the attack's: its bodies were stopped with 408.
  assert.ok((attack['408'] ?? 0) >= 1, JSON.stringify(attack))
})

test('5 addresses holding every upload place at a pace above MOD_BODY_MIN_RATE cannot keep a client of a sixth address out', async () => {
  const attackers = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6']
  // 2000 bytes every 100 ms: 20 000 bytes/s against the minimum of 8 KiB/s, so no body trickles, even with the
  // attack's timers late on a loaded machine (at 10 000 bytes/s some did). Without the fair share, 0 of 40 are served.
  const {statuses} = await attackScenario('127.0.0.1', '127.0.0.7', attackers, 3, 2000)
  assert.ok(servedShare(statuses) >= 0.95, `served ${statuses.filter((s) => s === 200).length} of ${statuses.length}: ${statuses.join(' ')}`)
})

/** The IPv6 scenarios of the tests below: connections per attacking address, and the attacking addresses. */
const IPV6_SCENARIOS = {
  // 5 /64 networks of one /56.
  networks: {perAddress: 3, attackers: [1, 2, 3, 4, 5].map((n) => `2001:db8:0:${n}::1`)},
  // 20 /64 networks of one /56, one body each: each /64 alone holds at most one body, so it would never lag; its /56 does.
  oneEach: {perAddress: 1, attackers: Array.from({length: 20}, (_, n) => `2001:db8:0:${(n + 1).toString(16)}::1`)},
}

/** Why no network namespace with IPv6 test addresses on lo can be made here (unshare, ip), or undefined. */
function noNamespace(): string | undefined {
  const probe = spawnSync('unshare', ['-rn', 'sh', '-c', 'ip link set lo up && ip -6 addr add 2001:db8::1/128 dev lo nodad'], {encoding: 'utf8'})
  return probe.status === 0 ? undefined : `no network namespace with IPv6 test addresses here (${probe.error?.message ?? probe.stderr.trim()})`
}
const namespaceMissing = noNamespace()

let ipv6Outcomes: Record<keyof typeof IPV6_SCENARIOS, Outcome> | undefined

/**
 * The scenarios (slow-attack-namespace.ts), one after the other in one network namespace of their own where the
 * server, the client and the attackers have IPv6 test addresses on lo; run once for both tests.
 */
function inNamespace(name: keyof typeof IPV6_SCENARIOS): Outcome {
  ipv6Outcomes ??= runNamespace()
  return ipv6Outcomes[name]
}

function runNamespace(): Record<keyof typeof IPV6_SCENARIOS, Outcome> {
  const host = '2001:db8:ffff::1'
  const legit = '2001:db8:1:7::7'
  const names = Object.keys(IPV6_SCENARIOS) as (keyof typeof IPV6_SCENARIOS)[]
  const attackers = new Set(names.flatMap((n) => IPV6_SCENARIOS[n].attackers))
  const add = [host, legit, ...attackers].map((a) => `ip -6 addr add ${a}/128 dev lo nodad`).join(' && ')
  const script = join(ROOT, 'test', 'server', 'slow-attack-namespace.ts')
  const args = [host, legit, ...names.map((n) => JSON.stringify(IPV6_SCENARIOS[n]))]
  const run = spawnSync('unshare', ['-rn', 'sh', '-c', `ip link set lo up && ${add} && exec "$0" "$@"`, process.execPath, ...nodeArgs(script), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  })
  assert.is(run.status, 0, run.error?.message ?? run.stderr)
  const outcomes = JSON.parse(run.stdout) as Outcome[]
  return Object.fromEntries(names.map((n, i) => [n, outcomes[i]])) as Record<keyof typeof IPV6_SCENARIOS, Outcome>
}

testUnless(namespaceMissing, '5 /64 networks of one /56 holding every upload place cannot keep a client of another IPv6 network out', () => {
  const outcome = inNamespace('networks')
  assert.ok(servedShare(outcome.statuses) >= 0.95, `served ${outcome.statuses.filter((s) => s === 200).length} of ${outcome.statuses.length}: ${outcome.statuses.join(' ')}`)
  assert.ok((outcome.attack['408'] ?? 0) >= 1, JSON.stringify(outcome.attack))
})

testUnless(namespaceMissing, '20 /64 networks of one /56 with a trickling body each count as one network: they cannot take each other\'s places in turn', () => {
  const outcome = inNamespace('oneEach')
  assert.ok(servedShare(outcome.statuses) >= 0.95, `served ${outcome.statuses.filter((s) => s === 200).length} of ${outcome.statuses.length}: ${outcome.statuses.join(' ')}`)
})

function server(limits: {maxUploads: number; maxUploadsPerClient?: number}) {
  return start(fakeEngine(), testSettings(join(dir.path, 'cache'), {limits: {bodyTimeoutMs: 2000, bodyMinRate: 1000, ...limits}}), {tmpDir: join(dir.path, 'uploads')})
}

test('when every upload place is taken, the body that trickles slowest gives its place up with 408; the newcomer is served', async () => {
  const s = await server({maxUploads: 2})
  const url = `${s.base}/v1/moderate`
  // Nothing after the head from 127.0.0.2, a byte every 50 ms from 127.0.0.3: both under 1000 bytes/s.
  const silent = trickleAttack({url, addresses: ['127.0.0.2'], perAddress: 1, everyMs: 60_000, retryMs: 60_000})
  const slow = trickleAttack({url, addresses: ['127.0.0.3'], perAddress: 1, everyMs: 50, retryMs: 60_000})
  try {
    await until(() => s.handle.gate.receiving === 2)
    await new Promise((resolve) => setTimeout(resolve, 1100))
    const answer = await send(s.base, '127.0.0.4')
    assert.equal([answer.status, JSON.parse(answer.body).source], [200, 'normal.png'])
    await until(() => silent.answers['408'] === 1)
    assert.equal(slow.answers, {})
  } finally {
    silent.stop()
    slow.stop()
    await s.stop()
  }
})

test("the body given up is answered 408 with the rate it kept; a client that trickles itself takes no one's place (503)", async () => {
  const s = await server({maxUploads: 2, maxUploadsPerClient: 2})
  const {head, type} = multipartParts('file', 'slow.png')
  const held = rawRequest(`${s.base}/v1/moderate`, {headers: {'content-type': type, 'content-length': head.length + 1000}, localAddress: '127.0.0.2'}, (req) => req.write(head))
  held.catch(() => {})
  const other = trickleAttack({url: `${s.base}/v1/moderate`, addresses: ['127.0.0.3'], perAddress: 1, everyMs: 50, retryMs: 60_000})
  try {
    await until(() => s.handle.gate.receiving === 2)
    await new Promise((resolve) => setTimeout(resolve, 1100))
    const own = await send(s.base, '127.0.0.2')
    assert.equal([own.status, rawError(own).error.code], [503, 'overloaded'])
    const newcomer = await send(s.base, '127.0.0.4')
    assert.is(newcomer.status, 200)
    const answer = await held
    assert.is(answer.status, 408)
    assert.match(
      rawError(answer).error.message,
      /^the request body is arriving too slowly: \d+ bytes in 1\.\d s, less than 1000 bytes per second \(MOD_BODY_MIN_RATE\); its upload place went to another client$/,
    )
    assert.equal(other.answers, {})
  } finally {
    other.stop()
    await s.stop()
  }
})

test('a body within its grace keeps its place, however little has arrived: the newcomer is refused with 503', () => {
  const gate = createGate(5, {maxUploads: 1, maxUploadsPerClient: 1, maxBufferedBytes: Number.POSITIVE_INFINITY, bodyMinRate: 1000, bodyTimeoutMs: 30_000})
  const stopped: string[] = []
  gate.receive({key: '192.0.2.1', network: '192.0.2.1'}).read((e) => stopped.push(e.code))
  assert.throws(() => gate.receive({key: '192.0.2.2', network: '192.0.2.2'}), (e: {code: string}) => e.code === 'overloaded')
  assert.equal([stopped, gate.receiving], [[], 1])
})

/** A gate of `places` upload places, each network up to all of them, with a minimum pace of 1000 bytes/s. */
function fairGate(places: number) {
  return createGate(5, {maxUploads: places, maxUploadsPerClient: places, maxBufferedBytes: Number.POSITIVE_INFINITY, bodyMinRate: 1000, bodyTimeoutMs: 30_000})
}

const from = (address: string) => ({key: address, network: address})

test('with every place taken, a newcomer takes the place of the network holding the most, from its body with the fewest bytes in', () => {
  const gate = fairGate(3)
  const stopped: string[] = []
  const open = (address: string, name: string, bytes: number) => {
    const upload = gate.receive(from(address))
    upload.read((e) => stopped.push(`${name}: ${e.code}`)).arrived(bytes)
    return upload
  }
  open('192.0.2.1', 'a1', 5000)
  open('192.0.2.1', 'a2', 10)
  open('192.0.2.2', 'b1', 0)
  // 192.0.2.3 holds none, 192.0.2.1 two: a body of 192.0.2.1 goes, although each is within its grace.
  gate.receive(from('192.0.2.3'))
  assert.equal(stopped, ['a2: overloaded'])
  assert.is(gate.receiving, 3)
})

test('a place never moves from a network holding one more than the newcomer\'s: 503, and no place changes hands in turn', () => {
  const gate = fairGate(3)
  const stopped: string[] = []
  gate.receive(from('192.0.2.1')).read(() => stopped.push('a1'))
  gate.receive(from('192.0.2.1')).read(() => stopped.push('a2'))
  gate.receive(from('192.0.2.2')).read(() => stopped.push('b1'))
  assert.throws(() => gate.receive(from('192.0.2.2')), (e: {code: string}) => e.code === 'overloaded')
  assert.throws(() => gate.receive(from('192.0.2.1')), (e: {code: string}) => e.code === 'overloaded')
  assert.equal([stopped, gate.receiving], [[], 3])
})

test('the body that gave its place up for fairness is answered 503 overloaded with Retry-After; the newcomer is served', async () => {
  const s = await server({maxUploads: 2, maxUploadsPerClient: 2})
  const {head, type} = multipartParts('file', 'steady.png')
  // Two bodies from 127.0.0.2 that keep 2000 bytes/s, twice the minimum.
  const steady = [0, 1].map(() => {
    let ticker: NodeJS.Timeout | undefined
    const answer = rawRequest(`${s.base}/v1/moderate`, {headers: {'content-type': type, 'content-length': head.length + 1_000_000}, localAddress: '127.0.0.2'}, (req) => {
      req.write(head)
      ticker = setInterval(() => req.write(Buffer.alloc(200, 'A')), 100)
    })
    answer.catch(() => {}).finally(() => clearInterval(ticker))
    return {answer, stop: () => clearInterval(ticker)}
  })
  try {
    await until(() => s.handle.gate.receiving === 2)
    await new Promise((resolve) => setTimeout(resolve, 1100))
    const newcomer = await send(s.base, '127.0.0.3')
    assert.is(newcomer.status, 200)
    const given = await Promise.race(steady.map((b) => b.answer))
    assert.equal([given.status, rawError(given).error.code, given.headers['retry-after']], [503, 'overloaded', '1'])
    assert.match(rawError(given).error.message, /its upload place went to a client of a network holding fewer upload places/)
  } finally {
    for (const b of steady) b.stop()
    await s.stop()
  }
})

test.run()
