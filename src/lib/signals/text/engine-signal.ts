/**
 * The text signal in the inference core: it reads the lines of text in each frame (signal.ts) and applies the
 * policy's text rules. It runs only when the policy has text rules, and reads a video's frames only when the
 * policy asks (`text: {video: true}`). A rule's hit is a violation of its category: the category's score is 1
 * on that frame, whatever the other signals say; a frame without hits leaves their score as it is (0 for
 * `contact_info`, which only text feeds). Lines and hits come out in the pixels of the frame as decoded.
 * It reads the frame as decoded, before border trimming and the aspect bound, as the code reader does: trimmed,
 * a poster's large words lose the margin around them and the detector cuts their first and last letters (a
 * 48-pixel `CASINO` on white read `CASINC`), and a long banner's ends would be cut off with the aspect bound.
 */
import {frameIndices} from '../../image/animation-frames.js'
import {defaultThreads} from '../../model/threads.js'
import {roundScore} from '../../scoring/calibrate.js'
import type {RgbImage} from '../../image/rgb.js'
import {applyHits, ruleCategories} from '../rule-hits.js'
import {toImageBox, type Box, type FrameOrigin, type FramePlace, type OpenSignal, type Signal, type SignalSetup} from '../signal.js'
import {textEvidence, type FrameText} from './evidence.js'
import {DEFAULT_READ_OPTIONS, DEFAULT_TEXT_BUDGET, frameBudget, type ReadBudget, type TextBox} from './read.js'
import {textPolicyOf, textSection} from './policy-section.js'
import {openTextSignal, textWanted} from './signal.js'

/**
 * Frames of an animation read, at most, evenly spaced over those scored (the first, the middle and the last): the
 * detector's cost is per frame. The image's budget is split between them.
 */
export const ANIMATION_FRAMES_READ = 3

/**
 * The frames of an animation read, among those scored: ANIMATION_FRAMES_READ evenly spaced, with the one on screen
 * longest in place of the middle one when it is not among them, so that text shown most of the time is read.
 */
export function framesRead(place: FramePlace): number[] {
  const read = frameIndices(place.count, ANIMATION_FRAMES_READ)
  if (place.longest !== undefined && !read.includes(place.longest)) read[Math.floor(read.length / 2)] = place.longest
  return read
}

/**
 * A frame to read, where it starts in the decoded one and what it may read; null for a frame not read (a video's
 * when the policy does not ask), `unread` for an animation's frame past ANIMATION_FRAMES_READ.
 */
type TextInput = {frame: RgbImage; origin: FrameOrigin; budget: ReadBudget} | null | 'unread'

/** The output of a frame not read (its evidence is nothing, not an empty reading). */
const NOTHING_READ: FrameText = {lines: [], hits: [], truncated: false}

/**
 * The output of an animation's frame scored and not read: its text was left unread, as lines past the budget are,
 * so the image says `text_truncated`, where it said that all was read.
 */
const LEFT_UNREAD: FrameText = {lines: [], hits: [], truncated: true}

function boxOf(b: TextBox, origin: FrameOrigin): Box {
  return toImageBox([b.x, b.y, b.width, b.height], origin)
}

async function open(setup: SignalSetup, opened: ReadonlyMap<string, OpenSignal>): Promise<OpenSignal<TextInput, FrameText>> {
  const {policy} = setup
  const text = textPolicyOf(policy)
  if (text === undefined) throw new Error('the text signal opened without text rules')
  const columns = setup.textBudget ?? text.budget ?? DEFAULT_TEXT_BUDGET
  const reader = await openTextSignal(text, {threads: setup.threads ?? (await defaultThreads())}, {...DEFAULT_READ_OPTIONS, budget: {columns}})
  const fed = ruleCategories(policy, new Set(text.rules.map((r) => r.category)), opened)

  return {
    prepare(_frame, origin, decoded, kind, place) {
      if (!textWanted(text, kind)) return null
      const whole = {...origin, left: 0, top: 0}
      // A video's frames are read one by one, each with an image's budget.
      if (kind === 'video') return {frame: decoded, origin: whole, budget: reader.budget}
      const read = framesRead(place)
      return read.includes(place.index) ? {frame: decoded, origin: whole, budget: frameBudget(reader.budget, read.length)} : 'unread'
    },
    async infer(inputs) {
      const wanted = inputs.filter((i) => i !== null && i !== 'unread')
      const reading = wanted.length > 0 ? await reader.read(wanted.map((i) => i.frame), wanted.map((i) => i.budget)) : {lines: [], hits: [], truncated: []}
      let next = 0
      return inputs.map((input) => {
        if (input === null) return NOTHING_READ
        if (input === 'unread') return LEFT_UNREAD
        const k = next++
        return {
          truncated: reading.truncated[k],
          lines: reading.lines[k].map((l) => ({text: l.text, confidence: roundScore(l.confidence), box: boxOf(l.box, input.origin)})),
          hits: reading.hits[k].map((h) => ({
            rule: h.rule,
            category: h.category,
            text: h.text,
            box: boxOf(h.box, input.origin),
            ...(h.detector === undefined ? {} : {detector: h.detector}),
          })),
        }
      })
    },
    adjust: (labels, outputs) => {
      const output = outputs.get('text') as FrameText | undefined
      return applyHits(labels, new Map(output?.hits.map((h) => [h.category, 1])), fed)
    },
    evidence: (output) => (output === NOTHING_READ ? undefined : output),
    dispose: () => reader.close(),
  }
}

export const textSignal = {
  name: 'text',
  title: 'the text reader',
  description: "Text read in images (PP-OCRv4), matched against the policy's text rules",
  kind: 'model',
  combine: {mode: 'max'},
  off: (setup) => (textWanted(textPolicyOf(setup.policy), 'image') ? undefined : 'the policy has no text rules'),
  weight: (category) => category.signals.text ?? 0,
  policy: textSection,
  evidence: textEvidence,
  open,
} satisfies Signal
