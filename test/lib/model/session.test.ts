import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {isModError} from '../../../src/lib/errors.js'
import {openSession, sessionOptions} from '../../../src/lib/model/session.js'

const TOY = join(import.meta.dirname, '..', '..', 'fixtures', 'models', 'toy', 'onnx', 'vision_model.onnx')

test('every session runs on the CPU, sequentially, fully optimised, with the threads asked for', () => {
  assert.equal(sessionOptions({threads: 3, keepArena: true}), {
    executionProviders: ['cpu'],
    intraOpNumThreads: 3,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    enableCpuMemArena: true,
    enableMemPattern: true,
  })
  const short = sessionOptions({threads: 1, keepArena: false})
  assert.equal([short.enableCpuMemArena, short.enableMemPattern], [false, false])
})

test('opens an ONNX file', async () => {
  const session = await openSession(TOY, {threads: 1, keepArena: true})
  assert.equal(session.inputNames, ['pixel_values'])
  await session.release()
})

test('a file onnxruntime cannot load is invalid_config naming the file', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mod-session-'))
  const path = join(dir, 'broken.onnx')
  await writeFile(path, 'not a model')
  try {
    const e = await openSession(path, {threads: 1, keepArena: false}).catch((x: unknown) => x)
    assert.ok(isModError(e) && e.code === 'invalid_config', String(e))
    assert.match((e as Error).message, `cannot load ${path}`)
  } finally {
    await rm(dir, {recursive: true, force: true})
  }
})

test.run()
