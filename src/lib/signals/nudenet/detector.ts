/**
 * The NudeNet detector as the engine runs it: opened from its installed folder (or "not installed"), one
 * onnxruntime session opened as every model's is (session.ts), frames prepared by preprocess.ts and outputs
 * decoded by decode.ts.
 */
import {join} from 'node:path'

import * as ort from 'onnxruntime-node'

import {ModError} from '../../errors.js'
import type {RgbImage} from '../../image/rgb.js'
import {hashFile} from '../../model/file-hash.js'
import {openSession} from '../../model/session.js'
import {defaultThreads} from '../../model/threads.js'
import {stackTensors} from '../../pipeline/stack.js'
import {decodeNudenet, type Detection} from './decode.js'
import {NUDENET_ANCHORS, NUDENET_INPUT, NUDENET_OUTPUT, NUDENET_ROW, NUDENET_SIZE} from './labels.js'
import {installedNudenet, loadNudenetPreset, type DetectorManifest} from './manifest.js'
import {prepareNudenet, type NudenetInput} from './preprocess.js'

export interface NudenetOptions {
  /** The installed folder (`<cacheDir>/nudenet`). */
  dir: string
  /** onnxruntime intra-op threads; default: chosen for the machine. */
  threads?: number
  /** MOD_CACHE_DIR: the optimised graph is cached there as every model's is. */
  cacheDir?: string
}

export interface NudenetDetector {
  readonly manifest: DetectorManifest
  /** A decoded frame as the model takes it. */
  prepare(frame: RgbImage): NudenetInput
  /** Detections per prepared frame, in each frame's pixels; one inference run for the whole batch. */
  detect(inputs: NudenetInput[]): Promise<Detection[][]>
  close(): Promise<void>
}

/**
 * Opens the installed detector, or gives undefined when it is not installed. An installed file whose sha256 is
 * not the one the shipped manifest pins is refused: it is not the model the rule was measured with. That is
 * `model_unavailable`, not `model_missing`: someone pulled the add-on, so running on without it must not be
 * silent.
 */
export async function openNudenet(opts: NudenetOptions): Promise<NudenetDetector | undefined> {
  const manifest = await installedNudenet(opts.dir)
  if (!manifest) return undefined
  const pinned = (await loadNudenetPreset()).files[0]
  const path = join(opts.dir, manifest.files[0].path)
  const {sha256: sha} = await hashFile(path).catch((e: NodeJS.ErrnoException) => {
    throw new ModError('model_unavailable', `${path} cannot be read (${e.code ?? e.message}); run \`mod models pull nudenet\` again`)
  })
  if (sha !== pinned.sha256) {
    throw new ModError('model_unavailable', `${path} has sha256 ${sha}, not the ${pinned.sha256} of ${manifest.id}; run \`mod models pull nudenet\` again`)
  }
  const threads = opts.threads ?? (await defaultThreads())
  const session = await openSession(path, {threads, keepArena: true, cacheDir: opts.cacheDir})
  const rows = NUDENET_ROW * NUDENET_ANCHORS
  return {
    manifest,
    prepare: prepareNudenet,
    async detect(inputs) {
      if (inputs.length === 0) return []
      const batch = stackTensors(inputs.map((f) => f.pixels))
      const out = await session.run({[NUDENET_INPUT]: new ort.Tensor('float32', batch, [inputs.length, 3, NUDENET_SIZE, NUDENET_SIZE])})
      const boxes = out[NUDENET_OUTPUT]
      if (!boxes || boxes.type !== 'float32' || boxes.data.length !== inputs.length * rows) {
        throw new ModError('invalid_config', `${path} gave no [${inputs.length}, ${NUDENET_ROW}, ${NUDENET_ANCHORS}] float32 '${NUDENET_OUTPUT}'`)
      }
      const data = boxes.data as Float32Array
      return inputs.map((f, i) => decodeNudenet(data.subarray(i * rows, (i + 1) * rows), f.width, f.height))
    },
    async close() {
      await session.release()
    },
  }
}
