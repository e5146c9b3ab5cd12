import type {Limits} from './config/settings.js'
import {isModError, ModError} from './errors.js'
import {prepareFrames as prepareFramesOf, prepareImage} from './image/prepare.js'
import {openClip, type ClipModel} from './model/clip.js'
import {loadManifest} from './model/manifest.js'
import type {Manifest, Precision} from './model/manifest-types.js'
import {loadPresetManifest} from './model/presets.js'
import {embedPrompts} from './model/prompt-cache.js'
import type {Policy, PresetName} from './policy/types.js'
import {applyHead, checkHeadFits, checkHeadParents, loadHead, type Head} from './scoring/head.js'
import {buildResult, mergeFrameLabels} from './scoring/result.js'
import {policyPrompts, scoreCategories} from './scoring/score.js'
import {DEFAULT_DECODE_LIMITS} from './video/frames.js'
import {resolveFfmpeg} from './video/ffmpeg.js'
import {moderateVideo} from './video/moderate.js'
import type {CategoriesResult, ErrorEntry, Label, ModerationResult, RgbImage, Segment, VideoResult} from './types.js'

export interface EngineOptions {
  preset: PresetName
  modelDir: string
  cacheDir: string
  policy: Policy
  headPath?: string
  threads?: number
  /** fp32 unless the model's int8 or fp16 encoders are asked for. */
  precision?: Precision
  limits: Limits
  /** Frames per inference run. */
  batchSize?: number
  /** MOD_FFMPEG: an explicit ffmpeg binary. */
  ffmpeg?: string
}

export interface VideoOptions {
  source: string
  fps: number
  minFrames: number
  stopOnViolation: boolean
  /** Called for each segment as its run of frames closes (the CLI's --ndjson). */
  onSegment?: (label: string, segment: Segment) => void
  onProgress?: (framesDone: number, seconds: number) => void
  signal?: AbortSignal
}

/** One image to moderate; `read` is called when the engine is ready for it, so a folder is never held in memory. */
export interface ImageInput {
  source: string
  read: () => Promise<Buffer>
}

export type ItemResult = ModerationResult | ErrorEntry

/** An image decoded, trimmed and preprocessed: the CPU work before inference (one tensor per frame). */
export interface PreparedImage {
  readonly tensors: Float32Array[]
}

export interface Engine {
  readonly preset: PresetName
  readonly policy: Policy
  isLoaded(): boolean
  /** Loads the image encoder, the head and the prompt embeddings (from the disk cache when warm); idempotent. */
  load(): Promise<void>
  moderateImage(data: Buffer, source: string): Promise<ModerationResult>
  /** The first half of moderateImage; needs no model session, so it can run while another image is inferred. */
  prepareImage(data: Buffer): Promise<PreparedImage>
  /** The second half: embeds and scores a prepared image. */
  scorePrepared(prepared: PreparedImage, source: string): Promise<ModerationResult>
  /** Results in input order, as each batch finishes; decoding of later inputs overlaps inference of earlier ones. */
  moderateMany(inputs: Iterable<ImageInput> | AsyncIterable<ImageInput>): AsyncGenerator<ItemResult>
  /** Scores decoded frames (video): trimmed, preprocessed and embedded as one batch. */
  scoreFrames(frames: RgbImage[]): Promise<Label[][]>
  /** Samples frames of the video file at `fps` with ffmpeg and returns timestamped segments per violated label. */
  moderateVideo(path: string, options: VideoOptions): Promise<VideoResult>
  categories(): Promise<CategoriesResult>
  close(): Promise<void>
}

/** Errors that belong to one input: a batch reports them as an entry and goes on. */
const ITEM_ERRORS = new Set(['unreadable_image', 'unsupported_media', 'payload_too_large'])

function errorEntry(source: string, e: ModError): ErrorEntry {
  return {source, error: {code: e.code, message: e.message}}
}

interface Ready {
  clip: ClipModel
  prompts: Map<string, Float32Array>
  head?: Head
}

type Prepared = {ok: Float32Array[]} | {err: unknown}

export function createEngine(opts: EngineOptions): Engine {
  const {policy, limits} = opts
  const batchSize = opts.batchSize ?? 8
  const precision = opts.precision ?? 'fp32'
  let manifestP: Promise<Manifest> | undefined
  let readyP: Promise<Ready> | undefined
  let ready: Ready | undefined
  let headP: Promise<Head | undefined> | undefined
  let ffmpegP: Promise<string> | undefined

  const manifest = (): Promise<Manifest> => {
    manifestP ??= loadManifest(opts.modelDir, opts.preset, precision)
    manifestP.catch(() => (manifestP = undefined))
    return manifestP
  }

  const head = (): Promise<Head | undefined> => {
    headP ??= opts.headPath ? loadHead(opts.headPath) : Promise.resolve(undefined)
    headP.catch(() => (headP = undefined))
    return headP
  }

  async function open(): Promise<Ready> {
    const m = await manifest()
    const h = await head()
    if (h) {
      checkHeadFits(h, m.id, m.embedding_size)
      checkHeadParents(h, policy)
    }
    const clip = await openClip(opts.modelDir, m, {threads: opts.threads, cacheDir: opts.cacheDir})
    try {
      const prompts = await embedPrompts(policyPrompts(policy), {
        cacheDir: opts.cacheDir,
        // Reduced-precision text encoders give slightly different embeddings: they get their own cache.
        modelId: precision === 'fp32' ? m.id : `${m.id}-${precision}`,
        embed: (texts) => clip.embedTexts(texts),
      })
      // The text encoder is only needed for prompts; once they are embedded its memory goes back.
      await clip.releaseText()
      ready = {clip, prompts, head: h}
      return ready
    } catch (e) {
      await clip.close()
      throw e
    }
  }

  const load = (): Promise<Ready> => {
    readyP ??= open()
    readyP.catch(() => (readyP = undefined))
    return readyP
  }

  async function prepareFrames(frames: RgbImage[]): Promise<Float32Array[]> {
    const m = await manifest()
    return (await prepareFramesOf(frames, {preprocess: m.preprocess, trimBorders: policy.trim_borders})).tensors
  }

  async function prepare(data: Buffer): Promise<Float32Array[]> {
    const m = await manifest()
    const limitsOf = {maxBytes: limits.maxBytes, maxPixels: limits.maxPixels}
    return (await prepareImage(data, {limits: limitsOf, preprocess: m.preprocess, trimBorders: policy.trim_borders})).tensors
  }

  function labelsOf(r: Ready, embedding: Float32Array): Label[] {
    const labels = scoreCategories(embedding, policy, r.prompts)
    return r.head ? applyHead(r.head, embedding, labels) : labels
  }

  /** Runs the image encoder over the frames of several items at once, in chunks of batchSize frames. */
  async function embedAll(r: Ready, tensors: Float32Array[]): Promise<Float32Array[]> {
    const out: Float32Array[] = []
    for (let i = 0; i < tensors.length; i += batchSize) {
      const chunk = tensors.slice(i, i + batchSize)
      const size = chunk[0].length
      const batch = new Float32Array(size * chunk.length)
      chunk.forEach((t, j) => batch.set(t, j * size))
      out.push(...(await r.clip.embedImages(batch, chunk.length)))
    }
    return out
  }

  async function scoreTensors(r: Ready, perItem: Float32Array[][]): Promise<Label[][]> {
    const embeddings = await embedAll(r, perItem.flat())
    let k = 0
    return perItem.map((frames) => mergeFrameLabels(frames.map(() => labelsOf(r, embeddings[k++]))))
  }

  async function* moderateMany(inputs: Iterable<ImageInput> | AsyncIterable<ImageInput>): AsyncGenerator<ItemResult> {
    const r = await load()
    const iterator = (Symbol.asyncIterator in inputs ? inputs[Symbol.asyncIterator]() : inputs[Symbol.iterator]()) as
      | AsyncIterator<ImageInput>
      | Iterator<ImageInput>
    // Two batches in flight: one being embedded while the next is decoded and preprocessed on libuv's threads.
    const depth = batchSize * 2
    const window: {source: string; prepared: Promise<Prepared>}[] = []
    let exhausted = false
    const fill = async () => {
      while (!exhausted && window.length < depth) {
        const next = await iterator.next()
        if (next.done) {
          exhausted = true
          break
        }
        const input = next.value
        window.push({
          source: input.source,
          prepared: input.read().then(prepare).then(
            (ok) => ({ok}),
            (err: unknown) => ({err}),
          ),
        })
      }
    }

    for (;;) {
      await fill()
      if (window.length === 0) return
      const batch = window.splice(0, batchSize)
      await fill()
      const prepared = await Promise.all(batch.map((b) => b.prepared))
      const scorable: Float32Array[][] = []
      for (const p of prepared) {
        if ('err' in p) {
          if (!(isModError(p.err) && ITEM_ERRORS.has(p.err.code))) throw p.err
        } else scorable.push(p.ok)
      }
      const labels = await scoreTensors(r, scorable)
      let k = 0
      for (const [i, p] of prepared.entries()) {
        yield 'err' in p ? errorEntry(batch[i].source, p.err as ModError) : buildResult(batch[i].source, labels[k++])
      }
    }
  }

  const engine: Engine = {
    preset: opts.preset,
    policy,
    isLoaded: () => ready !== undefined,
    load: async () => {
      await load()
    },
    async moderateImage(data, source) {
      // The model loads while the image decodes.
      const [, prepared] = await Promise.all([load(), engine.prepareImage(data)])
      return engine.scorePrepared(prepared, source)
    },
    prepareImage: async (data) => ({tensors: await prepare(data)}),
    async scorePrepared(prepared, source) {
      const [labels] = await scoreTensors(await load(), [prepared.tensors])
      return buildResult(source, labels)
    },
    moderateMany,
    async scoreFrames(frames) {
      const [r, tensors] = await Promise.all([load(), prepareFrames(frames)])
      const embeddings = await embedAll(r, tensors)
      return embeddings.map((e) => labelsOf(r, e))
    },
    async moderateVideo(path, o) {
      ffmpegP ??= resolveFfmpeg(opts.ffmpeg)
      ffmpegP.catch(() => (ffmpegP = undefined))
      const [ffmpeg] = await Promise.all([ffmpegP, load()])
      return moderateVideo(path, {
        ...o,
        batchSize,
        decode: {ffmpeg, ...DEFAULT_DECODE_LIMITS, maxSeconds: limits.maxVideoSeconds, maxPixels: limits.maxPixels},
        scoreFrames: (frames) => engine.scoreFrames(frames),
      })
    },
    async categories() {
      const id = await manifest().then(
        (m) => m.id,
        async (e: unknown) => {
          if (isModError(e) && e.code === 'model_missing') return (await loadPresetManifest(opts.preset)).id
          throw e
        },
      )
      const h = await head()
      const listed = policy.categories.map((c) => ({
        name: c.name,
        parent: c.parent,
        threshold: c.threshold,
        origin: c.origin,
        prompts: c.prompts,
        negatives: c.negatives,
      }))
      const names = new Set(listed.map((c) => c.name))
      const headOnly = (h?.labels ?? [])
        .filter((l) => !names.has(l.name))
        .map((l) => ({name: l.name, parent: l.parent, threshold: l.threshold, origin: 'head' as const}))
      return {preset: opts.preset, model: id, categories: [...listed, ...headOnly]}
    },
    async close() {
      const r = ready
      ready = undefined
      readyP = undefined
      await r?.clip.close()
    },
  }
  return engine
}
