import {addAbortListener} from 'node:events'

import {ModError} from '../lib/errors.js'
import type {Scheduler} from '../lib/pipeline/scheduler.js'
import {plural} from '../lib/plural.js'
import {formatSize} from '../lib/sizes.js'
import type {Client} from './client-address.js'

export interface Ticket {
  /**
   * The stages this request's moderation runs in: preparing (decoding, preprocessing) takes turns with the other
   * requests of the worker, first come first served, so memory holds one decoding at a time while the model infers
   * others; inference is batched by the engine with whatever else is ready. A request whose client went away
   * (`signal` aborted) leaves the line without running.
   */
  scheduler(signal?: AbortSignal): Scheduler
  /** Gives the place back; safe to call more than once. */
  release(): void
}

/** A request body being received, and the bytes of it the worker holds in memory until the request is answered. */
export interface Upload {
  /**
   * Counts `bytes` more as held before they are buffered, or throws `overloaded` when the worker would then hold
   * more than MOD_MAX_BUFFERED_BYTES (the request's earlier bytes stay counted until `release`).
   */
  take(bytes: number): void
  /** Counts `bytes` fewer as held (a reservation turned out larger than the data). */
  give(bytes: number): void
  /**
   * The body is read from now on: its bytes are counted through the returned `arrived`, and `stop` fails it when
   * its place is given to another client (Gate.receive); `end` once the body is in or has failed.
   */
  read(stop: (e: ModError) => void): Reading
  /** Gives the upload place back once the body is in; safe to call more than once. */
  done(): void
  /** Gives the upload place and every held byte back, once the request no longer needs its input. */
  release(): void
}

/** How a body being read reports its progress to its upload place. */
export interface Reading {
  arrived(bytes: number): void
  end(): void
}

/** Where a request's buffered bytes are counted. */
export type Hold = Pick<Upload, 'take'>

/** Where a body being read counts its pace. */
export type Place = Pick<Upload, 'read'>

export interface Gate {
  /**
   * Lets a request of `client` (clientOf) start receiving its body, or throws `overloaded` when the queue is full
   * already (a busy worker refuses at once instead of reading an upload it could not admit; not for a body that
   * does not go to this queue, `queued: false`) or `maxUploads` bodies are being received, and `too_many_uploads`
   * when `client` is already sending `maxUploadsPerClient`: clients that send slowly hold upload places, never
   * queue places, and one client cannot hold them all. When every upload place is taken, the slowest body that
   * trickles (see `trickling`) is stopped with `request_timeout` and its place given to this request, unless the
   * network of `client` lags (see `lags`): clients that hold places by sending a byte now and then, from however
   * many addresses, cannot keep out a client that sends at a normal pace, and cannot take each other's places in turn.
   * Failing that, the places are shared max-min fair between networks (Client.network): a body of the network
   * holding the most places, whatever its pace, is stopped with `overloaded` and its place given to this request,
   * when that network holds at least two more than the network of `client`. Clients that keep the minimum pace from
   * a few addresses can thus hold no more than their share, and never take a place back from a network holding
   * fewer: a place only ever moves towards an even share.
   */
  receive(client: Client, options?: {queued?: boolean}): Upload
  /**
   * Lets a request whose input is received into the queue, or throws `overloaded` when one running request and
   * `queueLimit` more are already in.
   */
  admit(): Ticket
  /** Requests let in and not yet released: running or waiting. */
  readonly admitted: number
  /** Request bodies being received. */
  readonly receiving: number
  /** Request bytes held in memory by requests not answered yet; never more than the budget. */
  readonly held: number
}

const cancelled = (): ModError => new ModError('bad_request', 'the request was cancelled by the client')

/**
 * The items of one request waiting in line: they leave it together when the request's client goes away. A batch's
 * items wait together, so the request's signal gets one abort listener for all of them (one each would pass Node's
 * limit of 10 listeners per signal), removed when the request is released.
 */
interface Party {
  readonly gone: boolean
  /** Calls `leave` when the client goes away; the returned function stops that. */
  watch(leave: () => void): () => void
}

interface Lock {
  /** Runs `work` alone, first come first served; a caller whose party is gone leaves the line. */
  hold<T>(work: () => Promise<T>, party?: Party): Promise<T>
}

function createLock(): Lock {
  let busy = false
  const waiting: (() => void)[] = []

  function acquire(party?: Party): Promise<void> {
    if (party?.gone) return Promise.reject(cancelled())
    if (!busy) {
      busy = true
      return Promise.resolve()
    }
    return new Promise((resolve, reject) => {
      const go = () => {
        unwatch()
        resolve()
      }
      const unwatch =
        party?.watch(() => {
          waiting.splice(waiting.indexOf(go), 1)
          reject(cancelled())
        }) ?? (() => {})
      waiting.push(go)
    })
  }

  function handOver(): void {
    const next = waiting.shift()
    if (next) next()
    else busy = false
  }

  return {
    async hold(work, party) {
      await acquire(party)
      try {
        return await work()
      } finally {
        handOver()
      }
    },
  }
}

/** The party of a request's items; `dispose` removes its listener from `signal`. */
function partyOf(signal: AbortSignal | undefined): Party & Disposable {
  const leaving = new Set<() => void>()
  let listener: Disposable | undefined
  return {
    get gone() {
      return signal?.aborted ?? false
    },
    watch(leave) {
      if (!signal) return () => {}
      listener ??= addAbortListener(signal, () => {
        for (const each of [...leaving]) each()
      })
      leaving.add(leave)
      return () => leaving.delete(leave)
    },
    [Symbol.dispose]() {
      listener?.[Symbol.dispose]()
      leaving.clear()
    },
  }
}

export interface Intake {
  /** MOD_MAX_UPLOADS */
  maxUploads: number
  /** MOD_MAX_UPLOADS_PER_CLIENT */
  maxUploadsPerClient: number
  /** MOD_MAX_BUFFERED_BYTES */
  maxBufferedBytes: number
  /** MOD_BODY_MIN_RATE, in bytes per second: the pace under which a body gives its place up to a newcomer. */
  bodyMinRate: number
  /** MOD_BODY_TIMEOUT_MS: the grace of a new body is never longer (see `graceMs`). */
  bodyTimeoutMs: number
}

const UNBOUNDED: Intake = {
  maxUploads: Number.POSITIVE_INFINITY,
  maxUploadsPerClient: Number.POSITIVE_INFINITY,
  maxBufferedBytes: Number.POSITIVE_INFINITY,
  bodyMinRate: 0,
  bodyTimeoutMs: Number.POSITIVE_INFINITY,
}

/**
 * How long a body has been read before its pace counts for giving its place up: time for its first round trips
 * (a connection's first bytes come slowly while TCP finds its pace), and never longer than the silence
 * MOD_BODY_TIMEOUT_MS allows.
 */
export function graceMs(bodyTimeoutMs: number): number {
  return Math.min(1000, bodyTimeoutMs)
}

/** One fewer for `key`; a key at zero leaves the map. */
function countDown(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1
  if (left === 0) counts.delete(key)
  else counts.set(key, left)
}

/** A body being read on an upload place: whose, since when, how many bytes so far, and how to stop it. */
interface Body {
  /** Client.network of its request. */
  network: string
  since: number
  /** How long its pace is not looked at: graceMs, or 0 for a body of a client that lags already. */
  grace: number
  arrived: number
  stop(e: ModError): void
  /** Gives the place back. */
  done(): void
}

/**
 * The per-process moderation queue (MOD_QUEUE_LIMIT), uploads (MOD_MAX_UPLOADS) and buffered bytes
 * (MOD_MAX_BUFFERED_BYTES); state lives in the returned value.
 */
export function createGate(queueLimit: number, intake: Intake = UNBOUNDED): Gate {
  const {maxUploads, maxUploadsPerClient, maxBufferedBytes, bodyMinRate} = intake
  const grace = graceMs(intake.bodyTimeoutMs)
  let admitted = 0
  let receiving = 0
  /** Bodies being received per client; a client with none has no entry. */
  const byClient = new Map<string, number>()
  /** Upload places held per network (Client.network), the same way. */
  const byNetwork = new Map<string, number>()
  /** The bodies being read now. */
  const reading = new Set<Body>()
  /**
   * A body trickles when, past its grace, fewer than MOD_BODY_MIN_RATE bytes per second have arrived on average since
   * its first byte: the 408 of MOD_BODY_MIN_RATE only comes MOD_BODY_TIMEOUT_MS later, and that long is what a
   * client reconnecting after each 408 would hold a place for with a byte now and then.
   */
  const trickling = (body: Body, now: number) => {
    const ms = now - body.since
    return ms >= body.grace && body.arrived < (bodyMinRate * ms) / 1000
  }
  /** A body has shown its pace once as many bytes arrived as MOD_BODY_MIN_RATE asks of its time, its grace at least. */
  const shownPace = (body: Body, now: number) => body.arrived >= (bodyMinRate * Math.max(now - body.since, body.grace)) / 1000
  /**
   * A network (Client.network: an IPv4 address, an IPv6 /56) lags while one of its bodies has not shown its pace. Its
   * requests take no one's place, and their bodies have no grace: else clients that trickle from several addresses
   * (or the many /64s of one /56) would take each other's places in turn, or take the places that others' answered
   * requests free, and keep every body within its grace.
   */
  const lags = (network: string, now: number) => {
    for (const body of reading) if (body.network === network && !shownPace(body, now)) return true
    return false
  }
  const slowestTrickling = (now: number): Body | undefined => {
    let slowest: Body | undefined
    for (const body of reading) {
      if (!trickling(body, now)) continue
      if (!slowest || body.arrived / (now - body.since) < slowest.arrived / (now - slowest.since)) slowest = body
    }
    return slowest
  }
  /**
   * The body to stop so that a request of `network` gets a place, by max-min fairness: of the network holding the
   * most places (at least two more than `network`), the body with the fewest bytes in (the least work lost), the
   * newest of those. Bodies not being read yet cannot be stopped; their places still count.
   */
  const fairVictim = (network: string): Body | undefined => {
    const mine = byNetwork.get(network) ?? 0
    let victim: Body | undefined
    let most = mine + 1
    for (const body of reading) {
      const theirs = byNetwork.get(body.network) ?? 0
      if (theirs < most) continue
      if (!victim || theirs > most || body.arrived < victim.arrived || (body.arrived === victim.arrived && body.since > victim.since)) {
        victim = body
        most = theirs
      }
    }
    return victim && (byNetwork.get(victim.network) ?? 0) > mine + 1 ? victim : undefined
  }
  const yieldPlace = (body: Body) => {
    body.done()
    body.stop(
      new ModError(
        'overloaded',
        'the server is busy: its upload place went to a client of a network holding fewer upload places (every network gets its share of MOD_MAX_UPLOADS); retry shortly',
      ),
    )
  }
  const giveUp = (body: Body) => {
    const seconds = (performance.now() - body.since) / 1000
    body.done()
    body.stop(
      new ModError(
        'request_timeout',
        `the request body is arriving too slowly: ${formatSize(body.arrived)} in ${seconds.toFixed(1)} s, less than ` +
          `${formatSize(bodyMinRate)} per second (MOD_BODY_MIN_RATE); its upload place went to another client`,
      ),
    )
  }
  let held = 0
  const preparing = createLock()
  const checkQueue = () => {
    if (admitted > queueLimit) {
      throw new ModError('overloaded', `the server is busy (${plural(queueLimit, 'request')} already waiting); retry shortly`)
    }
  }

  return {
    get admitted() {
      return admitted
    },
    get receiving() {
      return receiving
    },
    get held() {
      return held
    },
    receive(client, {queued = true} = {}) {
      if (queued) checkQueue()
      const mine = byClient.get(client.key) ?? 0
      if (mine >= maxUploadsPerClient) {
        throw new ModError(
          'too_many_uploads',
          `this client is already sending ${plural(maxUploadsPerClient, 'upload')} (MOD_MAX_UPLOADS_PER_CLIENT); wait for one to finish`,
        )
      }
      const lagging = lags(client.network, performance.now())
      if (receiving >= maxUploads) {
        const slowest = lagging ? undefined : slowestTrickling(performance.now())
        if (slowest) giveUp(slowest)
        else {
          const victim = fairVictim(client.network)
          if (!victim) throw new ModError('overloaded', `the server is busy (${plural(maxUploads, 'upload')} already in progress); retry shortly`)
          yieldPlace(victim)
        }
      }
      receiving++
      byClient.set(client.key, mine + 1)
      byNetwork.set(client.network, (byNetwork.get(client.network) ?? 0) + 1)
      let done = false
      let bytesHeld = 0
      let body: Body | undefined
      const upload: Upload = {
        take(bytes) {
          if (held + bytes > maxBufferedBytes) {
            throw new ModError('overloaded', 'the server is busy (its memory for uploads is in use); retry shortly')
          }
          held += bytes
          bytesHeld += bytes
        },
        give(bytes) {
          const back = Math.min(bytes, bytesHeld)
          held -= back
          bytesHeld -= back
        },
        read(stop) {
          const current: Body = {network: client.network, since: performance.now(), grace: lagging ? 0 : grace, arrived: 0, stop, done: () => upload.done()}
          body = current
          reading.add(current)
          return {
            arrived(bytes) {
              current.arrived += bytes
            },
            end() {
              reading.delete(current)
            },
          }
        },
        done() {
          if (body) reading.delete(body)
          if (done) return
          done = true
          receiving--
          countDown(byClient, client.key)
          countDown(byNetwork, client.network)
        },
        release() {
          upload.done()
          upload.give(bytesHeld)
        },
      }
      return upload
    },
    admit() {
      checkQueue()
      admitted++
      let released = false
      const parties: Disposable[] = []
      return {
        scheduler: (signal) => {
          const party = partyOf(signal)
          parties.push(party)
          return {
            prepare: (work) => preparing.hold(work, party),
            infer: (work) => (party.gone ? Promise.reject(cancelled()) : work()),
          }
        },
        release() {
          if (released) return
          released = true
          admitted--
          for (const party of parties) party[Symbol.dispose]()
        },
      }
    },
  }
}
