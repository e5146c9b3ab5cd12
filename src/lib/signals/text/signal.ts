/**
 * The text signal as the engine uses it: opened only when the policy has text rules (nothing is loaded
 * otherwise), it reads the frames of one item and applies the policy's rules to each frame's lines.
 */
import type {RgbImage} from '../../image/rgb.js'
import {openTextModel, type TextModelOptions} from './model.js'
import type {TextPolicy} from './policy-section.js'
import {DEFAULT_READ_OPTIONS, readText, type ReadBudget, type ReadOptions, type TextLine} from './read.js'
import {applyRules, compileRules, type TextHit} from '../../rules/match.js'

export interface TextReading {
  /** The lines read in each frame. */
  lines: TextLine[][]
  /** The rule hits of each frame. */
  hits: TextHit[][]
  /** Per frame, whether reading stopped early: lines were left unread. */
  truncated: boolean[]
}

export interface TextSignal {
  /** Reads each frame within its budget (by default an item's whole budget each). */
  read(frames: RgbImage[], budgets?: ReadBudget[]): Promise<TextReading>
  /** What one item may read (ReadOptions.budget). */
  readonly budget: ReadBudget
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
    budget: read.budget,
    async read(frames, budgets) {
      const found = await readText(model, frames, read, budgets)
      const lines = found.map((f) => f.lines)
      return {lines, hits: lines.map((l) => applyRules(rules, l)), truncated: found.map((f) => f.truncated)}
    },
    close: () => model.close(),
  }
}
