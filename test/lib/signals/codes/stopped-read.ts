// Run by reader-thread.test.ts in a child process: reads a full-HD noise frame in the code reader's thread with the
// time limit given (ms), saying `asked` once the frame is in the thread, so that the test can stop this process
// (SIGSTOP: the wall clock goes on, the thread's CPU time does not) and go on with it; prints the read as JSON.
import {randomBytes} from 'node:crypto'

import {openThreadedCodeReader} from '../../../../src/lib/signals/codes/reader-thread.js'

const reader = openThreadedCodeReader({timeoutMs: Number(process.argv[2]), inverted: true})
// The thread started and ready first, so that the stop falls on the frame's reading.
await reader.read({data: Buffer.alloc(16 * 16 * 3), width: 16, height: 16})
const read = reader.read({data: randomBytes(1920 * 1080 * 3), width: 1920, height: 1080})
await new Promise((resolve) => setImmediate(resolve))
process.stdout.write('asked\n')
process.stdout.write(`${JSON.stringify(await read)}\n`)
await reader.close()
