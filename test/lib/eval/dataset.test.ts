import {execFileSync} from 'node:child_process'
import {mkdirSync, symlinkSync, writeFileSync} from 'node:fs'
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
    if (isModError(e) && e.code === 'invalid_config') return (e.context?.problems as string[]) ?? []
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

test('symlinks are followed as scan follows them: a linked label folder, subfolder and image count; a link back into the dataset is not walked again; a broken link to an image is an item (reading it fails and is reported)', async () => {
  const elsewhere = layout({'kept/a.png': 'x', 'kept/b.png': 'x', 'more/c.png': 'x', 'one.png': 'x'})
  const dir = layout({'weapons/own.png': 'x'})
  try {
    symlinkSync(join(elsewhere.path, 'kept'), join(dir.path, 'safe'))
    symlinkSync(join(elsewhere.path, 'more'), join(dir.path, 'weapons', 'sub'))
    symlinkSync(join(elsewhere.path, 'one.png'), join(dir.path, 'weapons', 'linked.png'))
    symlinkSync(dir.path, join(dir.path, 'weapons', 'loop'))
    symlinkSync(join(elsewhere.path, 'gone.png'), join(dir.path, 'weapons', 'broken.png'))
    const ds = await openDataset(dir.path, {known: new Set(['weapons'])})
    assert.equal(await all(ds.items()), [
      ['safe/a.png', []],
      ['safe/b.png', []],
      ['weapons/broken.png', ['weapons']],
      ['weapons/linked.png', ['weapons']],
      ['weapons/own.png', ['weapons']],
      ['weapons/sub/c.png', ['weapons']],
    ])
  } finally {
    dir.remove()
    elsewhere.remove()
  }
})

test('a folder linked under two labels is a problem naming both, not counted under the first alone', async () => {
  const elsewhere = layout({'kept/a.png': 'x'})
  const dir = layout({'safe/s.png': 'x', 'weapons/own.png': 'x', 'gore/own.png': 'x'})
  try {
    symlinkSync(join(elsewhere.path, 'kept'), join(dir.path, 'gore', 'shared'))
    symlinkSync(join(elsewhere.path, 'kept'), join(dir.path, 'weapons', 'shared'))
    assert.equal(await problemsOf(openDataset(dir.path)), [
      'weapons/shared/ is the folder already under gore/ (a link): its images would count under gore alone: keep one link, and give the images both labels in labels.csv',
    ])
  } finally {
    dir.remove()
    elsewhere.remove()
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
      'unknown label weapns: not a category of the active policy (known: weapons, gore)',
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

test('labels that differ only in case are one label written two ways: Safe/ beside safe/, Weapons/ beside weapons/', async () => {
  const dir = layout({'safe/a.png': 'x', 'Safe/b.png': 'x', 'weapons/c.png': 'x', 'Weapons/d.png': 'x', 'greenish/e.png': 'x'})
  try {
    assert.equal(await problemsOf(openDataset(dir.path)), [
      'labels "safe" and "Safe" differ only in case: write one label one way (rename the folder or the labels)',
      'labels "Weapons" and "weapons" differ only in case: write one label one way (rename the folder or the labels)',
    ])
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

test('labels.csv: safe beside a label is a contradiction reported, not read as the label; safe alone or empty is no label', () => {
  const problems: string[] = []
  const listed = parseLabelsCsv('file,labels\na.png,safe;weapons\nb.png,safe\nc.png,\nd.png,weapons ; safe ; gore\n', problems)
  assert.equal(listed.get('b.png'), [])
  assert.equal(listed.get('c.png'), [])
  assert.equal(problems, [
    'labels.csv:2: a.png is marked both safe and weapons: safe means no label, so write one or the other',
    'labels.csv:5: d.png is marked both safe and weapons;gore: safe means no label, so write one or the other',
  ])
})

test('labels files as spreadsheets save them: ";" between the fields after a file;labels header, empty columns after the labels', () => {
  // A European Excel's "CSV (semicolon)": a byte order mark, CRLF, the labels quoted when several, or not.
  const problems: string[] = []
  const semicolons = parseLabelsCsv('\uFEFFFile;Labels;;\r\na.png;redness\r\n"b;c.png";"redness;gore";\r\nd.png;gore;weapons\r\ne.png;\r\n\r\n', problems)
  assert.equal([...semicolons], [
    ['a.png', ['redness']],
    ['b;c.png', ['redness', 'gore']],
    ['d.png', ['gore', 'weapons']],
    ['e.png', []],
  ])
  // Columns a spreadsheet keeps empty after the labels, in the header and the lines; a third value is still refused.
  const commas = parseLabelsCsv('file,labels,,\r\na.png,redness,,\r\n"b, c.png",,\r\nd.png,x,note\r\n', problems)
  assert.equal([...commas], [
    ['a.png', ['redness']],
    ['b, c.png', []],
  ])
  assert.equal(problems, ['labels.csv:4: expected "file,labels" (labels separated by ";"), got "d.png,x,note"'])
  // Columns headed as a person heads them, and a Mac Excel's "CSV (Macintosh)", whose lines end in CR alone.
  for (const head of ['filename,label', 'Image,Labels', '"File name";"Label"', 'path,labels']) {
    const separator = head.includes(';') ? ';' : ','
    const mac = parseLabelsCsv(`${head}\ra.png${separator}redness\rb.png${separator}\r`, problems)
    assert.equal([...mac], [['a.png', ['redness']], ['b.png', []]], head)
  }
  assert.is(problems.length, 1)
})

test('a labels.csv that is not UTF-8 text (UTF-16, a Windows encoding), a folder or a FIFO is one problem, at once', async () => {
  const dir = layout({'safe/a.png': 'x', 'weapons/café.png': 'x'})
  try {
    const labels = join(dir.path, 'labels.csv')
    const lines = 'file,labels\r\nweapons/café.png,weapons;gore\r\n'
    // Excel's "Unicode Text" and PowerShell 5's `>`: UTF-16 with its byte order mark.
    writeFileSync(labels, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(lines, 'utf16le')]))
    assert.equal(await problemsOf(openDataset(dir.path)), ['the labels file labels.csv is UTF-16 text: save it as UTF-8'])
    // Excel's plain "CSV" on Windows: its code page, é a single byte.
    writeFileSync(labels, Buffer.from(lines, 'latin1'))
    assert.equal(await problemsOf(openDataset(dir.path)), ['the labels file labels.csv is not UTF-8 text (line 2): save it as UTF-8'])
    writeFileSync(join(dir.path, 'review.csv'), Buffer.from(lines, 'latin1'))
    assert.equal(await problemsOf(openDataset(join(dir.path, 'review.csv'))), ['the labels file review.csv is not UTF-8 text (line 2): save it as UTF-8'])
    execFileSync('rm', [labels])
    mkdirSync(labels)
    assert.equal((await problemsOf(openDataset(dir.path)))[0], 'labels.csv is a folder: the labels are read from a regular file')
    execFileSync('rmdir', [labels])
    // Opening a FIFO would wait for a writer for ever.
    execFileSync('mkfifo', [labels])
    assert.equal(await problemsOf(openDataset(dir.path)), ['labels.csv is a FIFO: the labels are read from a regular file'])
  } finally {
    dir.remove()
  }
})

test('a dataset path that is neither a folder nor a file is an error', async () => {
  const problems = openDataset('/nonexistent/dataset')
  await problems.then(
    () => assert.unreachable(),
    (e) => assert.is(e.message, 'dataset /nonexistent/dataset: not a folder or a labels file'),
  )
})

test('labels files: comments before and between lines; the header is the first other line', () => {
  const problems: string[] = []
  const listed = parseLabelsCsv('# written by mod scan --report\n#\nfile,labels\na.png,x\n# a note\n"#b.png",safe\n', problems, 'review.csv')
  assert.equal([...listed], [
    ['a.png', ['x']],
    ['#b.png', []],
  ])
  assert.equal(problems, [])
  parseLabelsCsv('a.png,x\nb.png,y,z\n', problems, 'review.csv')
  assert.equal(problems, ['review.csv:2: expected "file,labels" (labels separated by ";"), got "b.png,y,z"'])
})

test('a labels file alone is a dataset: paths absolute or relative to its folder, any extension, no safe/ folder', async () => {
  const dir = layout({'photos/a.png': 'x', 'photos/no-extension': 'x', 'elsewhere/c.jpg': 'x'})
  try {
    const file = join(dir.path, 'photos', 'review-labels.csv')
    const absolute = join(dir.path, 'elsewhere', 'c.jpg')
    writeFileSync(file, `# marks from a report\nfile,labels\na.png,weapons\nno-extension,safe\n${absolute},weapons;gore\n`)
    const ds = await openDataset(file, {known: new Set(['weapons', 'gore'])})
    assert.is(ds.root, file)
    assert.equal(ds.labels, ['gore', 'weapons'])
    assert.equal(ds.counts, {safe: 1, weapons: 2, gore: 1})
    assert.is(ds.images, 3)
    const items: [string, string, string[]][] = []
    for await (const item of ds.items()) items.push([item.source, item.shown, item.labels])
    assert.equal(items, [
      ['a.png', join(dir.path, 'photos', 'a.png'), ['weapons']],
      ['no-extension', join(dir.path, 'photos', 'no-extension'), []],
      [absolute, absolute, ['weapons', 'gore']],
    ])
  } finally {
    dir.remove()
  }
})

test('a labels file names files as the report page writes them: spaces inside quotes and backslashes kept; a Windows path still found', async () => {
  const dir = layout({' lead.png': 'x', 'trail.png ': 'x', 'back\\slash.png': 'x', 'sub/b.png': 'x', 'set/safe/c.png': 'x', 'set/red/d.png': 'x', 'set/red/e.png': 'x'})
  try {
    const file = join(dir.path, 'marks.csv')
    writeFileSync(file, `file,labels\n" lead.png",red\n "trail.png " ,red\n${join(dir.path, 'back\\slash.png')},safe\nsub\\b.png,safe\n`)
    const ds = await openDataset(file, {known: new Set(['red'])})
    const items: [string, string][] = []
    for await (const item of ds.items()) items.push([item.source, item.shown])
    assert.equal(items, [
      [' lead.png', join(dir.path, ' lead.png')],
      ['trail.png ', join(dir.path, 'trail.png ')],
      [join(dir.path, 'back\\slash.png'), join(dir.path, 'back\\slash.png')],
      ['sub\\b.png', join(dir.path, 'sub', 'b.png')],
    ])
    // In a dataset folder's labels.csv too.
    writeFileSync(join(dir.path, 'set', 'labels.csv'), 'file,labels\nred\\d.png,safe\n')
    assert.equal(await all((await openDataset(join(dir.path, 'set'), {known: new Set(['red'])})).items()), [['red/d.png', []], ['red/e.png', ['red']], ['safe/c.png', []]])
  } finally {
    dir.remove()
  }
})

test('a labels file: missing files, unknown labels and an empty list are reported', async () => {
  const dir = layout({'a.png': 'x', 'sub/b.png': 'x'})
  try {
    const file = join(dir.path, 'marks.csv')
    writeFileSync(file, 'file,labels\na.png,weapns\nsub,weapons\ngone.png,\n')
    assert.equal(await problemsOf(openDataset(file, {known: new Set(['weapons']), knownFrom: 'a category of the active policy or a label of the head'})), [
      'marks.csv lists sub, which is not a file',
      'marks.csv lists gone.png, which is not a file',
      'unknown label weapns: not a category of the active policy or a label of the head (known: weapons)',
    ])
    writeFileSync(file, '# nothing marked\nfile,labels\n')
    assert.equal(await problemsOf(openDataset(file)), ['marks.csv lists no images: one line per image, "file,labels"'])
  } finally {
    dir.remove()
  }
})

test.run()
