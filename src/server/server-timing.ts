import {orderedSteps, type StepTimes} from '../lib/pipeline/steps.js'

/**
 * The Server-Timing header of a moderation answer (MOD_SERVER_TIMING): `receive` (the body read and parsed),
 * the engine's steps in the order a request takes them (pipeline/steps.ts; those it did not take are left out)
 * and `total` (from the request's handler to the answer), in ms.
 */
export function serverTiming(receive: number, steps: StepTimes, total: number): string {
  const entries: [string, number][] = [['receive', receive], ...orderedSteps(steps), ['total', total]]
  return entries.map(([name, ms]) => `${name};dur=${ms.toFixed(2)}`).join(', ')
}
