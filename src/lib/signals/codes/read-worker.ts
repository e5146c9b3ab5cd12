/**
 * The code reader's thread (reader-thread.ts starts it): a reader of its own (read.ts), opened with the options
 * in its workerData, reads each frame's luminance posted to it and posts back the codes, or the error's message.
 * It says `ready` once the reader is open, so that a frame's time limit counts reading alone.
 */
import {parentPort, workerData} from 'node:worker_threads'

import {openCodeReader, type CodeReaderOptions, type FrameSize, type Luminance} from './read.js'

const port = parentPort
if (port === null) throw new Error('read-worker.ts runs as a worker thread')
const reader = await openCodeReader(workerData as CodeReaderOptions)
port.on('message', ({id, grey, size}: {id: number; grey: Luminance; size: FrameSize}) => {
  try {
    port.postMessage({id, codes: reader.readLuminance(grey, size)})
  } catch (e) {
    port.postMessage({id, error: (e as Error).message})
  }
})
port.postMessage('ready')
