/**
 * The inference thread (inference-thread.ts starts it): it holds the process's onnxruntime sessions and runs
 * them, one message at a time. A message opens a session, runs one on the tensors it carries or releases one;
 * the answer carries the same id, with what was asked or the error's message. Asked to leave, it ends once the tasks
 * it has begun are done.
 */
import {parentPort} from 'node:worker_threads'

import * as ort from 'onnxruntime-node'

import {fromWire, toWire, type Ask, type Answer, type Leave} from './inference-wire.js'

const port = parentPort
if (port === null) throw new Error('inference-worker.ts runs as a worker thread')

const sessions = new Map<number, ort.InferenceSession>()
let nextSession = 0

async function answer(ask: Ask): Promise<Answer> {
  switch (ask.op) {
    case 'open': {
      const session = await ort.InferenceSession.create(ask.path, ask.options)
      const id = nextSession++
      sessions.set(id, session)
      return {id: ask.id, session: id, inputNames: session.inputNames, outputNames: session.outputNames, inputMetadata: session.inputMetadata}
    }
    case 'run': {
      const session = sessions.get(ask.session)
      if (!session) throw new Error('the session was released')
      const feeds = fromWire(ask.feeds)
      const out = ask.fetches ? await session.run(feeds, ask.fetches) : await session.run(feeds)
      return {id: ask.id, outputs: toWire(out)}
    }
    case 'release': {
      const session = sessions.get(ask.session)
      sessions.delete(ask.session)
      await session?.release()
      return {id: ask.id}
    }
  }
}

/** The tasks begun and not done: leaving waits for them, as ending the thread inside one aborts the process. */
const begun = new Set<Promise<unknown>>()
let leaving = false

port.on('message', (ask: Ask | Leave) => {
  if (leaving) return
  if (ask.op === 'leave') {
    leaving = true
    void Promise.allSettled(begun).then(() => process.exit(0))
    return
  }
  const task = answer(ask).then(
    (a) => port.postMessage(a),
    (e: unknown) => port.postMessage({id: ask.id, error: e instanceof Error ? e.message : String(e)}),
  )
  begun.add(task)
  void task.finally(() => begun.delete(task))
})
port.postMessage('ready')
