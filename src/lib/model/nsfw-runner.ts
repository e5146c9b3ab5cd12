/**
 * The embedded NSFW specialist as the engine runs it: the shipped model (nsfw.ts) and its preprocessing
 * (nsfw-preprocess.ts) behind the engine's NsfwRunner interface.
 */
import type {NsfwRunner} from '../engine.js'
import {NSFW_VIEW_SIZE, nsfwPreprocess} from '../image/nsfw-preprocess.js'
import {openNsfw, type NsfwOptions} from './nsfw.js'

export async function openNsfwRunner(opts: NsfwOptions = {}): Promise<NsfwRunner> {
  const model = await openNsfw(opts)
  return {
    viewSize: NSFW_VIEW_SIZE,
    views: (frame) => nsfwPreprocess(frame, {flip: true}),
    classify: (batch, n) => model.classify(batch, n),
    close: () => model.close(),
  }
}
