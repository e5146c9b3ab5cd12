import {mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {openDataset, parseLabelsCsv, type DatasetItem} from '../../../src/lib/eval/dataset.js'
import {isModError} from '../../../src/lib/errors.js'
import {tempDir} from '../../helpers/cli.js'

function layout(files: Record<string, string>): {path: string; remove: () => void} {
  const dir = tempDir()
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(dir.path, name, '..'), {recursive: true})
    writeFileSync(join(dir.path, name), content)
  }
  return dir
}

async function all(items: AsyncGenerator<DatasetItem>): Promise<[string, string[]][]> {
  const out: [string, string[]][] = []
  for await (const item of items) out.push([item.source, item.labels])
  return out
}

async function problemsOf(p: Promise<unknown>): Promise<string[]> {
  try {
    await p
  } catch (e) {
    if (isModError(e) && e.code === 'invalid_config') return (e.details?.problems as string[]) ?? []
    throw e
  }
  throw new Error('expected an invalid_config error')
}

test('folders give labels, safe/ none; labels.csv gives several and overrides a folder; root images only when listed', async () => {
  const dir = layout({
    'safe/a.png': 'x',
    'safe/deep/b.jpg': 'x',
    'weapons/c.png': 'x',
    'weapons/notes.txt': 'x',
    'gore/d.png': 'x',
    'gore/relabelled.png': 'x',
    'both.png': 'x',
    'stray.png': 'x',
    'labels.csv': 'file,labels\nboth.png,weapons;gore\n"gore/relabelled.png",safe\n',
  })
  try {
    const ds = await openDataset(dir.path, {known: new Set(['weapons', 'gore', 'nudity'])})
    assert.equal(ds.labels, ['gore', 'weapons'])
    assert.equal(ds.counts, {safe: 3, weapons: 2, gore: 2})
    assert.is(ds.images, 6)
    assert.equal(ds.unlisted, ['stray.png'])
    assert.equal(await all(ds.items()), [
      ['gore/d.png', ['gore']],
      ['gore/relabelled.png', []],
      ['safe/a.png', []],
      ['safe/deep/b.jpg', []],
      ['weapons/c.png', ['weapons']],
      ['both.png', ['weapons', 'gore']],
    ])
  } finally {
    dir.remove()
  }
})

test('unknown labels, empty folders, a missing safe/ and listed files that do not exist are all reported', async () => {
  const dir = layout({
    'weapns/a.png': 'x',
    'gore/readme.txt': 'x',
    'labels.csv': 'file,labels\nmissing.png,weapons\n',
  })
  try {
    const problems = await problemsOf(openDataset(dir.path, {known: new Set(['weapons', 'gore'])}))
    assert.equal(problems, [
      'gore/ holds no images (.jpg .jpeg .jpe .png .webp .gif .avif .tif .tiff)',
      'labels.csv lists missing.png, which is not an image in the dataset folder',
      'no safe/ folder: the images that should get no label are needed',
      'unknown label weapns: not a category of the active policy or a label of the head (known: weapons, gore)',
    ])
  } finally {
    dir.remove()
  }
})

test('without a known list any label name is accepted (head training)', async () => {
  const dir = layout({'safe/a.png': 'x', 'greenish/b.png': 'x'})
  try {
    assert.equal((await openDataset(dir.path)).labels, ['greenish'])
  } finally {
    dir.remove()
  }
})

test('labels.csv: header optional, quoted files, malformed lines and duplicates reported', () => {
  const problems: string[] = []
  const listed = parseLabelsCsv('a.png,x;y\n"b,c.png", z ; \n\nd.png,x,y\na.png,x\n', problems)
  assert.equal([...listed], [
    ['a.png', ['x']],
    ['b,c.png', ['z']],
  ])
  assert.equal(problems, ['labels.csv:4: expected "file,labels" (labels separated by ";"), got "d.png,x,y"', 'labels.csv:5: a.png is listed twice'])
})

test('a dataset path that is not a folder is an error', async () => {
  const problems = openDataset('/nonexistent/dataset')
  await problems.then(
    () => assert.unreachable(),
    (e) => assert.is(e.message, 'dataset /nonexistent/dataset: not a folder'),
  )
})

test.run()
