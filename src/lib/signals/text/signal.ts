/**
 * The text signal as the engine uses it: opened only when the policy has text rules (nothing is loaded
 * otherwise), it reads the frames of one item and applies the policy's rules to each frame's lines.
 */
import type {TextPolicy} from '../../policy/types.js'
import type {RgbImage} from '../../types.js'
import {openTextModel, type TextModelOptions} from './model.js'
import {DEFAULT_READ_OPTIONS, readText, type ReadOptions, type TextLine} from './read.js'
import {applyRules, compileRules, type TextHit} from './rules.js'

export interface TextReading {
  /** The lines read in each frame. */
  lines: TextLine[][]
  /** The rule hits of each frame. */
  hits: TextHit[][]
}

export interface TextSignal {
  read(frames: RgbImage[]): Promise<TextReading>
  close(): Promise<void>
}

/** Whether an item needs the text signal: the policy has rules, and a video's frames only when it asks. */
export function textWanted(text: TextPolicy | undefined, kind: 'image' | 'video'): text is TextPolicy {
  return text !== undefined && text.rules.length > 0 && (kind === 'image' || text.video)
}

export async function openTextSignal(text: TextPolicy, o: TextModelOptions, read: ReadOptions = DEFAULT_READ_OPTIONS): Promise<TextSignal> {
  const model = await openTextModel(o)
  const rules = compileRules(text.rules)
  return {
    async read(frames) {
      const lines = await readText(model, frames, read)
      return {lines, hits: lines.map((l) => applyRules(rules, l))}
    },
    close: () => model.close(),
  }
}
