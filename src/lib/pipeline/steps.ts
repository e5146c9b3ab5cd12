/**
 * Where one request's time goes inside the engine, filled only when the caller passes a record (the server's
 * Server-Timing header, bench/http.ts). The steps: `decode`, `trim` (borders and the aspect bound), each
 * signal's `<signal>_preprocess`, `wait` (for the queue's turn and the batcher's run), each signal's
 * `<signal>_infer`, and `score`. Durations are in ms and add up over the request's frames; an inference run
 * shared with other requests counts in full for each request in it. The signals prepare a frame at the same
 * time (CLIP's resize runs in libvips' threads while the specialist computes its views), so their preprocess
 * steps overlap and may add up to more than the time preparation took.
 */
export type StepTimes = Record<string, number>

/** Adds `ms` to `step` of the record, when there is one. */
export function addStep(steps: StepTimes | undefined, step: string, ms: number): void {
  if (steps) steps[step] = (steps[step] ?? 0) + ms
}

/** Adds every step of `from` to `to`. */
export function addSteps(to: StepTimes | undefined, from: StepTimes): void {
  for (const [step, ms] of Object.entries(from)) addStep(to, step, ms)
}

/** Runs `work` and adds its duration to `step` (nothing is measured without a record). */
export function timeStep<T>(steps: StepTimes | undefined, step: string, work: () => T): T {
  if (!steps) return work()
  const started = performance.now()
  try {
    return work()
  } finally {
    addStep(steps, step, performance.now() - started)
  }
}

/** timeStep for asynchronous work: the time until its promise settles. */
export async function timeStepAsync<T>(steps: StepTimes | undefined, step: string, work: () => Promise<T>): Promise<T> {
  if (!steps) return work()
  const started = performance.now()
  try {
    return await work()
  } finally {
    addStep(steps, step, performance.now() - started)
  }
}

/** The time of the record's inference steps together (what is not waiting between submitting frames and their outputs). */
export function inferenceTime(steps: StepTimes): number {
  return Object.entries(steps).reduce((sum, [step, ms]) => (step.endsWith('_infer') ? sum + ms : sum), 0)
}

/** Where a step comes in a request; signals' steps in the order they were first recorded. */
function rank(step: string): number {
  if (step === 'decode') return 0
  if (step === 'trim') return 1
  if (step.endsWith('_preprocess')) return 2
  if (step === 'wait') return 3
  if (step.endsWith('_infer')) return 4
  if (step === 'score') return 5
  return 6
}

/** The record's steps in the order a request takes them. */
export function orderedSteps(steps: StepTimes): [string, number][] {
  return Object.entries(steps).sort(([a], [b]) => rank(a) - rank(b))
}
