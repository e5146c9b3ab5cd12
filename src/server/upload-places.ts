import {ModError} from '../lib/errors.js'
import {plural} from '../lib/plural.js'
import {formatSize} from '../lib/sizes.js'
import type {Client} from './client-address.js'

/**
 * Upload places (MOD_MAX_UPLOADS, MOD_MAX_UPLOADS_PER_CLIENT) and the request bytes held in memory
 * (MOD_MAX_BUFFERED_BYTES): who is sending a body, at what pace, and whose place goes to a newcomer when every place
 * is taken (the rules are stated on Gate.receive, queue.ts).
 */

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
   * its place is given to another client (Gate.receive); `end` once the body is in or has failed. A `download` is
   * the image a URL names, fetched on the request's place after its body: the same rules hold it to a pace, since a
   * remote server that trickles holds the place as a trickling client would.
   */
  read(stop: (e: ModError) => void, kind?: Incoming): Reading
  /** Gives the upload place back once the body is in; safe to call more than once. */
  done(): void
  /** Gives the upload place and every held byte back, once the request no longer needs its input. */
  release(): void
}

/** What is arriving on an upload place: the request's body, or the image its URL names. */
export type Incoming = 'body' | 'download'

/** How a body being read reports its progress to its upload place. */
export interface Reading {
  arrived(bytes: number): void
  end(): void
}

/** Where a request's buffered bytes are counted. */
export type Hold = Pick<Upload, 'take'>

/** Where a body being read counts its pace. */
export type Place = Pick<Upload, 'read'>

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

export const UNBOUNDED: Intake = {
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
  kind: Incoming
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

/** The bytes held in memory by requests not answered yet, and their limit. */
interface Budget {
  held: number
  readonly max: number
}

/**
 * A body trickles when, past its grace, fewer than MOD_BODY_MIN_RATE bytes per second have arrived on average since
 * its first byte: the 408 of MOD_BODY_MIN_RATE only comes MOD_BODY_TIMEOUT_MS later, and that long is what a
 * client reconnecting after each 408 would hold a place for with a byte now and then.
 */
function trickling(body: Body, now: number, minRate: number): boolean {
  const ms = now - body.since
  return ms >= body.grace && body.arrived < (minRate * ms) / 1000
}

/** A body has shown its pace once as many bytes arrived as MOD_BODY_MIN_RATE asks of its time, its grace at least. */
const shownPace = (body: Body, now: number, minRate: number): boolean => body.arrived >= (minRate * Math.max(now - body.since, body.grace)) / 1000

/**
 * A network (Client.network: an IPv4 address, an IPv6 /56) lags while one of its bodies has not shown its pace. Its
 * requests take no one's place, and their bodies have no grace: else clients that trickle from several addresses
 * (or the many /64s of one /56) would take each other's places in turn, or take the places that others' answered
 * requests free, and keep every body within its grace.
 */
function lags(reading: Set<Body>, network: string, now: number, minRate: number): boolean {
  for (const body of reading) if (body.network === network && !shownPace(body, now, minRate)) return true
  return false
}

function slowestTrickling(reading: Set<Body>, now: number, minRate: number): Body | undefined {
  let slowest: Body | undefined
  for (const body of reading) {
    if (!trickling(body, now, minRate)) continue
    if (!slowest || body.arrived / (now - body.since) < slowest.arrived / (now - slowest.since)) slowest = body
  }
  return slowest
}

/**
 * The body to stop so that a request of `network` gets a place, by max-min fairness: of the network holding the
 * most places (at least two more than `network`), the body with the fewest bytes in (the least work lost), the
 * newest of those. Bodies not being read yet cannot be stopped; their places still count.
 */
function fairVictim(reading: Set<Body>, byNetwork: Map<string, number>, network: string): Body | undefined {
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

function yieldPlace(body: Body): void {
  body.done()
  body.stop(
    new ModError(
      'overloaded',
      'the server is busy: its upload place went to a client of a network holding fewer upload places (every network gets its share of MOD_MAX_UPLOADS); retry shortly',
    ),
  )
}

function giveUp(body: Body, minRate: number): void {
  const seconds = (performance.now() - body.since) / 1000
  const pace = `${formatSize(body.arrived)} in ${seconds.toFixed(1)} s, less than ${formatSize(minRate)} per second (MOD_BODY_MIN_RATE); its upload place went to another client`
  body.done()
  // A slow client is its own request's fault (408); a slow image server is the URL's (504, as a fetch timing out).
  body.stop(
    body.kind === 'body'
      ? new ModError('request_timeout', `the request body is arriving too slowly: ${pace}`)
      : new ModError('url_fetch_timeout', `the image at the URL is arriving too slowly: ${pace}`),
  )
}

export interface UploadPlaces {
  /** Request bodies being received. */
  readonly receiving: number
  /** Request bytes held in memory by requests not answered yet; never more than the budget. */
  readonly held: number
  /** An upload place for a body of `client`, freeing one when every place is taken (Gate.receive says how). */
  take(client: Client): Upload
}

export function createUploadPlaces(intake: Intake): UploadPlaces {
  const {maxUploads, maxUploadsPerClient, bodyMinRate} = intake
  const grace = graceMs(intake.bodyTimeoutMs)
  const budget: Budget = {held: 0, max: intake.maxBufferedBytes}
  let receiving = 0
  /** Bodies being received per client; a client with none has no entry. */
  const byClient = new Map<string, number>()
  /** Upload places held per network (Client.network), the same way. */
  const byNetwork = new Map<string, number>()
  /** The bodies being read now. */
  const reading = new Set<Body>()
  const freeOne = (network: string, lagging: boolean) => {
    const slowest = lagging ? undefined : slowestTrickling(reading, performance.now(), bodyMinRate)
    if (slowest) return giveUp(slowest, bodyMinRate)
    const victim = fairVictim(reading, byNetwork, network)
    if (!victim) throw new ModError('overloaded', `the server is busy (${plural(maxUploads, 'upload')} already in progress); retry shortly`)
    yieldPlace(victim)
  }
  return {
    get receiving() {
      return receiving
    },
    get held() {
      return budget.held
    },
    take(client) {
      const mine = byClient.get(client.key) ?? 0
      if (mine >= maxUploadsPerClient) {
        throw new ModError(
          'too_many_uploads',
          `this client is already sending ${plural(maxUploadsPerClient, 'upload')} (a URL being fetched counts as one; MOD_MAX_UPLOADS_PER_CLIENT); wait for one to finish`,
        )
      }
      const lagging = lags(reading, client.network, performance.now(), bodyMinRate)
      if (receiving >= maxUploads) freeOne(client.network, lagging)
      receiving++
      byClient.set(client.key, mine + 1)
      byNetwork.set(client.network, (byNetwork.get(client.network) ?? 0) + 1)
      const free = () => {
        receiving--
        countDown(byClient, client.key)
        countDown(byNetwork, client.network)
      }
      return uploadOn({network: client.network, grace: lagging ? 0 : grace, reading, budget, free})
    },
  }
}

/** The Upload of one place: `free` gives the place back (once), `budget` counts its held bytes. */
function uploadOn(place: {network: string; grace: number; reading: Set<Body>; budget: Budget; free(): void}): Upload {
  const {network, grace, reading, budget} = place
  let done = false
  let bytesHeld = 0
  let body: Body | undefined
  const upload: Upload = {
    take(bytes) {
      if (budget.held + bytes > budget.max) {
        throw new ModError('overloaded', 'the server is busy (its memory for uploads is in use); retry shortly')
      }
      budget.held += bytes
      bytesHeld += bytes
    },
    give(bytes) {
      const back = Math.min(bytes, bytesHeld)
      budget.held -= back
      bytesHeld -= back
    },
    read(stop, kind = 'body') {
      const current: Body = {kind, network, since: performance.now(), grace, arrived: 0, stop, done: () => upload.done()}
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
      place.free()
    },
    release() {
      upload.done()
      upload.give(bytesHeld)
    },
  }
  return upload
}
