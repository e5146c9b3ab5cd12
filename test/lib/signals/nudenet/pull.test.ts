/**
 * `models pull nudenet`'s download, against a server on 127.0.0.1: a small stand-in file with its own detector
 * manifest, and the real model (copied from where test/helpers/nudenet.ts finds it) under the shipped manifest.
 */
import {createHash} from 'node:crypto'
import {mkdtemp, readFile, rm} from 'node:fs/promises'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {decodeImage} from '../../../../src/lib/image/decode.js'
import {pullModel} from '../../../../src/lib/model/pull.js'
import {openNudenet} from '../../../../src/lib/signals/nudenet/detector.js'
import {installedNudenet, loadNudenetPreset, nudenetDir, nudenetStatus, type DetectorManifest} from '../../../../src/lib/signals/nudenet/manifest.js'
import {rejection} from '../../../helpers/errors.js'
import {realNudenetFile} from '../../../helpers/nudenet.js'
import {testUnless} from '../../../helpers/skip.js'

const root = await mkdtemp(join(tmpdir(), 'mod-nudenet-pull-'))
const bodies = new Map<string, Buffer>()
const server: Server = createServer((req, res) => {
  const body = bodies.get(req.url ?? '')
  if (!body) return void res.writeHead(404).end()
  res.writeHead(200, {'content-length': body.length}).end(body)
})
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
test.after(async () => {
  server.close()
  await rm(root, {recursive: true, force: true})
})

const STANDIN = Buffer.from('not a model, a stand-in for the pull')
bodies.set('/standin.onnx', STANDIN)
const standin: DetectorManifest = {
  kind: 'detector',
  id: 'standin-detector',
  licence: 'AGPL-3.0',
  files: [{path: '320n.onnx', role: 'detector', url: `${base}/standin.onnx`, size: STANDIN.length, sha256: createHash('sha256').update(STANDIN).digest('hex')}],
}

test('the shipped manifest pins the model of the nudenet 3.4.2 wheel at its public release address, AGPL-3.0', async () => {
  const m = await loadNudenetPreset()
  assert.equal([m.kind, m.id, m.licence], ['detector', 'nudenet-320n', 'AGPL-3.0'])
  // The address is only read here, never fetched: tests stay on 127.0.0.1.
  const [file] = m.files
  assert.is(m.files.length, 1)
  assert.match(file.url ?? '', /^https:\/\/[^/]+\/notAI-tech\/NudeNet\/releases\/download\/v3\.4-weights\/320n\.onnx$/)
  assert.equal({...file, url: undefined}, {
    path: '320n.onnx',
    role: 'detector',
    url: undefined,
    size: 12150158,
    sha256: 'c15d8273adad2d0a92f014cc69ab2d6c311a06777a55545f2c4eb46f51911f0f',
  })
})

test('a pulled detector is installed with its manifest last; a file other than the pinned one is listed unverified and refused', async () => {
  const cache = join(root, 'standin')
  assert.is((await nudenetStatus(cache)).installed, false)
  const installed = await pullModel(standin, nudenetDir(cache))
  assert.equal(installed.files[0].trust, 'pinned')
  assert.equal(await readFile(join(nudenetDir(cache), '320n.onnx')), STANDIN)
  assert.equal((await installedNudenet(nudenetDir(cache)))?.id, 'standin-detector')
  const status = await nudenetStatus(cache)
  assert.equal([status.installed, status.verified, status.licence, status.size], [true, false, 'AGPL-3.0', 12150158])
  const e = await rejection(openNudenet({dir: nudenetDir(cache)}))
  // Not "not installed": someone pulled it, so the run must not go on silently without it.
  assert.is(e.code, 'model_unavailable')
  assert.match(e.message, 'run `mod models pull nudenet` again')
})

test('no installed folder: the detector is "not installed", not an error', async () => {
  assert.is(await openNudenet({dir: join(root, 'nowhere', 'nudenet')}), undefined)
})

const real = await realNudenetFile()
testUnless(real.missing, 'the real model pulled from a local copy under the shipped manifest opens and finds the astronaut\'s face', async () => {
  bodies.set('/320n.onnx', await readFile(real.path as string))
  const shipped = await loadNudenetPreset()
  const local: DetectorManifest = {...shipped, files: [{...shipped.files[0], url: `${base}/320n.onnx`}]}
  const cache = join(root, 'real')
  await pullModel(local, nudenetDir(cache))
  assert.equal((await nudenetStatus(cache)).verified, true)
  const detector = await openNudenet({dir: nudenetDir(cache), threads: 1})
  assert.ok(detector)
  try {
    const photo = fileURLToPath(new URL('../../../fixtures/photos/astronaut.jpg', import.meta.url))
    const [frame] = await decodeImage(await readFile(photo), {maxBytes: 1 << 26, maxPixels: 1 << 26})
    const [found] = await detector.detect([detector.prepare(frame)])
    assert.equal(found.map((d) => [d.label, d.box]), [['FACE_FEMALE', [173, 82, 102, 97]]])
  } finally {
    await detector.close()
  }
})

test.run()
