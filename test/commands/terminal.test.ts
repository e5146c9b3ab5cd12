// `mod scan` under a real terminal: util-linux `script` gives the command a pseudo-terminal (stderr on it, stdout
// redirected by the shell inside), and tmux renders what a person would see, scrollback included.
import {execFileSync, spawn} from 'node:child_process'
import {appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {BIN, shellWord, solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from '../helpers/cli.js'
import {colourClip} from '../lib/video/helpers.js'
import {inPane} from '../helpers/tmux.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const IMAGES = 300
/** The first hundred (000 to 099, the unreadable one among them), where the count need not make a long scan. */
const FIRST = 'imgs/0*.png'
const FIRST_COUNT = 100
const BROKEN = 50
/** A video whose name is wider on a terminal than it is long: each of its Chinese characters takes two columns. */
const WIDE_NAME = '长长的视频文件名称测试长长的视频文件名称测试.mp4'
/**
 * Redirections giving a command a stdin that never ends: a FIFO that the command itself also holds open for writing
 * (opened read-write first, so neither open waits), which nothing writes to. (stdin - on the terminal is refused.)
 */
const IDLE_STDIN = '3<>idle.fifo < idle.fifo'
const dir = tempDir('mod-tty-')
const images = join(dir.path, 'imgs')
let envPrefix = ''

test.before(async () => {
  mkdirSync(images)
  execFileSync('mkfifo', [join(dir.path, 'idle.fifo')])
  const png = await solidPng(0, 0, 255, 16, 16)
  for (let i = 0; i < IMAGES; i++) writeFileSync(join(images, `${String(i).padStart(3, '0')}.png`), png)
  // One unreadable image among the others: its ERROR row must stay visible too.
  writeFileSync(join(images, `${String(BROKEN).padStart(3, '0')}.png`), png.subarray(0, 40))
  // The specialist off: its 224x224 network on each of the 1 200 images scanned here would triple the test's CPU
  // time, and what a terminal shows does not depend on which signals score.
  const policy = writeRednessPolicy(dir.path)
  appendFileSync(policy, 'specialists: {nsfw: false}\n')
  envPrefix = `env -u NO_COLOR MOD_MODEL_DIR=${shellWord(TOY_MODEL)} MOD_CACHE_DIR=${shellWord(warmCacheDir(join(dir.path, 'cache')))} MOD_CONFIG=${shellWord(policy)}`
  await colourClip(join(dir.path, 'long.mp4'), ['blue'], 120, {size: '32x32', rate: 5})
  copyFileSync(join(dir.path, 'long.mp4'), join(dir.path, WIDE_NAME))
  // A dataset for the commands made of steps (eval): one safe image, one of the policy's category.
  for (const [folder, image] of [['safe', png], ['redness', await solidPng(240, 20, 20, 16, 16)]] as const) {
    mkdirSync(join(dir.path, 'ds', folder), {recursive: true})
    writeFileSync(join(dir.path, 'ds', folder, 'a.png'), image)
  }
  // One that scores long enough to be stopped while its steps are drawn: the 300 images as its safe ones.
  mkdirSync(join(dir.path, 'ds-long'))
  symlinkSync(images, join(dir.path, 'ds-long', 'safe'))
  symlinkSync(join(dir.path, 'ds', 'redness'), join(dir.path, 'ds-long', 'redness'))
})

test.after(() => dir.remove())

/** Runs a shell line under a pseudo-terminal; returns what reached the terminal. */
function underPty(line: string): string {
  return execFileSync('script', ['-qfec', `sh -c ${shellWord(line)}`, '/dev/null'], {cwd: dir.path, encoding: 'utf8', timeout: 60_000})
}

/**
 * Runs `command` (a shell line that writes its process id to `pidFile`, then execs) under a pseudo-terminal; once
 * what reached the terminal matches `ready`, hands the process id to `act`. Returns all that reached the terminal
 * and script's exit code (the command's).
 */
function underPtyActing(
  command: string,
  pidFile: string,
  ready: RegExp,
  act: (pid: number, shown: () => string) => void | Promise<void>,
): Promise<{shown: string; code: number | null}> {
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', `sh -c ${shellWord(command)}`, '/dev/null'], {cwd: dir.path, stdio: ['ignore', 'pipe', 'inherit']})
    let shown = ''
    let acted = false
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (d: string) => {
      shown += d
      if (acted || !ready.test(shown)) return
      acted = true
      Promise.resolve(act(Number(readFileSync(join(dir.path, pidFile), 'utf8')), () => shown)).catch((e: unknown) => {
        child.kill('SIGKILL')
        reject(e)
      })
    })
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({shown, code})
    })
  })
}

const mod = (): string => `${envPrefix} ${shellWord(process.execPath)} ${shellWord(BIN)}`

test('stdout to a file while stderr is a terminal: the file is valid JSON with every result', () => {
  const shown = underPty(`${mod()} scan imgs --json > report.json; echo mod-exit=$?`)
  assert.match(shown, 'mod-exit=2')
  const report = JSON.parse(readFileSync(join(dir.path, 'report.json'), 'utf8'))
  assert.is(report.length, IMAGES)
  assert.is(report[BROKEN].error.code, 'unsupported_media')
  // The progress line counts against the total once the folder walk has found every file.
  assert.match(shown, /Scanning \d+ of 300: \d+ scanned/)
})

test('stdout to a pipe: no progress in the pipe, every line is a result', () => {
  underPty(`${mod()} scan ${FIRST} --ndjson | cat > piped.txt`)
  const lines = readFileSync(join(dir.path, 'piped.txt'), 'utf8').trim().split('\n')
  assert.is(lines.length, FIRST_COUNT)
  for (const l of lines) assert.type(JSON.parse(l).source, 'string')
  assert.not.match(readFileSync(join(dir.path, 'piped.txt'), 'utf8'), 'Scanning')
})

test('stdout a pipe whose reader writes to the same terminal (| cat): no progress line, so none lands in a result row', () => {
  const shown = underPty(`{ ${mod()} scan ${FIRST}; echo $? > pipe-code.txt; } | cat`)
  assert.is(readFileSync(join(dir.path, 'pipe-code.txt'), 'utf8'), '2\n')
  assert.not.match(shown, 'Scanning')
  assert.not.match(shown, '\x1b')
  const rows = shown.replace(/\r/g, '').trimEnd().split('\n')
  assert.is(rows.length, FIRST_COUNT + 1)
  assert.is(rows.filter((r) => /^SAFE {4}imgs\/\d{3}\.png {2}\(/.test(r)).length, FIRST_COUNT - 1, shown)
  assert.is(rows.filter((r) => /^ERROR {3}imgs\/050\.png {2}unsupported_media: /.test(r)).length, 1)
  assert.equal(rows.filter((r) => r.includes('scanned:')), [`${FIRST_COUNT} scanned: ${FIRST_COUNT - 1} safe, 0 unsafe, 1 error`])
})

test('a reader that goes away (| head -1) stops the scan quietly: exit 141 as for SIGPIPE, one row, no summary, no error', () => {
  const shown = underPty(`{ ${mod()} scan imgs; echo $? > code.txt; } | head -1 > first.txt`)
  // Never 0: the scan was cut short, and `set -o pipefail` (a GitHub Actions step with `shell: bash`) must not read it as all safe.
  assert.is(readFileSync(join(dir.path, 'code.txt'), 'utf8'), '141\n')
  assert.match(readFileSync(join(dir.path, 'first.txt'), 'utf8'), /^SAFE\s+imgs\/000\.png/)
  assert.is(readFileSync(join(dir.path, 'first.txt'), 'utf8').split('\n').length, 2)
  // The summary line ends with a newline; progress lines are redrawn in place and never do.
  assert.not.match(shown, /scanned: .* errors\r?\n/)
  assert.not.match(shown, /EPIPE|Error|    at /)
})

const SIZE = {width: 160, height: 40}

test('results and progress on one terminal: every row stays visible, one summary, the progress line is gone', async () => {
  // More rows than the 40 of the screen: most of them scrolled up into tmux's history.
  const screen = await inPane(dir.path, `${mod()} scan ${FIRST}; echo EXIT=$?; sleep 60`, SIZE, (pane) => pane.until(/EXIT=\d+/))
  const rows = screen.split('\n')
  assert.is(rows.filter((r) => /^SAFE\s+imgs\/\d{3}\.png/.test(r)).length, FIRST_COUNT - 1)
  assert.equal(rows.filter((r) => r.startsWith('ERROR')), ['ERROR   imgs/050.png  unsupported_media: not an image in a supported format (JPEG, PNG, WebP, GIF, AVIF, TIFF)'])
  assert.equal(rows.filter((r) => r.includes('scanned:')), [`${FIRST_COUNT} scanned: ${FIRST_COUNT - 1} safe, 0 unsafe, 1 error`])
  assert.not.match(screen, 'Scanning')
  assert.match(screen, 'EXIT=2')
})

/** The JSON documents on a screen, each from a row starting with `[` or `{` to the row that completes it. */
function documents(screen: string): unknown[] {
  const found: unknown[] = []
  let text: string | undefined
  for (const row of screen.split('\n')) {
    if (text === undefined && !/^[[{]/.test(row)) continue
    text = text === undefined ? row : `${text}\n${row}`
    try {
      found.push(JSON.parse(text))
      text = undefined
    } catch {
      // Not complete yet: the next row continues it.
    }
  }
  return found
}

test('--json, SARIF and hash --json on the terminal with its progress line: nothing of the results is erased', async () => {
  // Each stops mid-line between its writes (`[`, an element before its comma), where a redrawn line would clear the row.
  const line = `${mod()} scan ${FIRST} --json; ${mod()} scan ${FIRST} --format sarif; ${mod()} hash ${FIRST} --json; echo EXIT=$?; sleep 60`
  const screen = await inPane(dir.path, line, SIZE, (pane) => pane.until(/EXIT=\d+/, 90_000, true))
  const [scan, sarif, hash] = documents(screen) as [{source: string}[], {runs: {results: unknown[]}[]}, {source: string}[]]
  assert.ok(Array.isArray(scan), screen)
  assert.equal(scan.map((r) => r.source), Array.from({length: FIRST_COUNT}, (_, i) => `imgs/${String(i).padStart(3, '0')}.png`))
  assert.is(sarif.runs[0].results.length, 1, screen)
  assert.ok(Array.isArray(hash), screen)
  assert.is(hash.length, FIRST_COUNT, screen)
  assert.not.match(screen, 'Scanning')
})

test('a terminal narrower than a progress line fits it too: no row left behind', async () => {
  const screen = await inPane(dir.path, `${mod()} scan ${FIRST} > /dev/null; echo E=$?; sleep 60`, {width: 8, height: 20}, (pane) => pane.until(/E=\d+/))
  assert.not.match(screen, 'Scann')
})

test('Ctrl-C stops a scan with exit 130, one line saying how far it got, no stack trace, no progress line left behind', async () => {
  // The images without the unreadable one (imgs/050.png), then stdin (-), a FIFO that never ends: the scan waits for
  // it with its progress line on the screen until Ctrl-C, however fast the images went. (The same glob given 20 times
  // was 100 files, each scanned once: on a fast machine the scan ended before the test saw its progress, and the
  // pane's shell ended 60 s later.)
  const screen = await inPane(dir.path, `${mod()} scan imgs/1*.png - ${IDLE_STDIN} > /dev/null; echo EXIT=$?; sleep 60`, SIZE, async (pane) => {
    await pane.until(/Scanning \d+ of \d+\+?: \d+ scanned/)
    pane.keys('C-c')
    return pane.until(/EXIT=\d+/)
  })
  assert.match(screen.trim(), /^mod: stopped by SIGINT after \d+ of \d+\+? files: \d+ scanned: \d+ safe, 0 unsafe, [01] errors\nEXIT=130$/)
})

test('a terminal made narrower mid-scan: the rewrapped line is cleared and drawn again to the new width, no row left behind', async () => {
  // The scan then waits on stdin with its line shown, which the resize finds at 100 columns taking 3 rows of 30.
  // Four empty rows first: tmux pushes the rows a rewrap adds into its history from the top, with the cursor.
  const line = `printf '\\n\\n\\n\\n'; ${mod()} scan imgs/1*.png - ${IDLE_STDIN} > /dev/null; echo EXIT=$?; sleep 60`
  const screen = await inPane(dir.path, line, {width: 100, height: 20}, async (pane) => {
    await pane.until(/Scanning 100 of 101\+?: 100 scanned: 100 safe, 0 unsafe, 0 errors/)
    pane.resize(30)
    // Drawn again at once, cut to 29 columns, with nothing of the old line left.
    const redrawn = await pane.until(/…/, 10_000)
    assert.match(redrawn.trim(), /^Scanning 100 of 101\+?: 100 sc\S*…$/, JSON.stringify(redrawn))
    pane.keys('C-c')
    return pane.until(/EXIT=\d+/, 10_000, true)
  })
  assert.match(screen.trim(), /^mod: stopped by SIGINT after 100 of 101\+? files: 100 scanned: 100 safe, 0 unsafe, 0 errors\nEXIT=130$/)
})

test('the terminal closed mid-scan (SIGHUP, stdout gone: EIO): exit 129 and the stop line, no output error', async () => {
  // The subshell ignores the hang-up to outlive the pane and record mod's exit code; mod handles SIGHUP itself.
  // stdin (-) never ends, so the scan is still running when the pane closes, its JSON array still open.
  const line = `( trap '' HUP; ${mod()} scan imgs/1*.png - --json ${IDLE_STDIN} 2> hup.err; echo $? > hup.rc )`
  await inPane(dir.path, line, SIZE, (pane) => pane.until(/imgs\/199\.png/))
  // The pane's server is gone: its terminal closed.
  const deadline = Date.now() + 20_000
  while (!existsSync(join(dir.path, 'hup.rc')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
  assert.is(readFileSync(join(dir.path, 'hup.rc'), 'utf8'), '129\n')
  assert.match(readFileSync(join(dir.path, 'hup.err'), 'utf8'), /^mod: stopped by SIGHUP after \d+ of \d+\+? files: [^\n]*\n$/)
})

test("the steps (eval) follow stderr, not stdout: colour, and whether the list is redrawn", () => {
  const steps = (line: string): string => underPty(`env -u CI ${line}`)
  // stdout a terminal, stderr a file: plain lines, no colour in the file.
  steps(`${mod()} eval ds 2> steps.err`)
  const logged = readFileSync(join(dir.path, 'steps.err'), 'utf8')
  assert.match(logged, '[COMPLETED] Scoring: 2/2 images')
  assert.not.match(logged, '\x1b')
  // stderr a terminal, stdout elsewhere: the list redrawn in place (its ticks), as with both on the terminal.
  const shown = steps(`${mod()} eval ds > /dev/null`).replace(/\x1b\[[0-9;]*m/g, '')
  assert.match(shown, /\u2714 Scoring: 2\/2 images/)
  assert.not.match(shown, '\u276f')
  // FORCE_COLOR=0 asks for no colour; TERM=dumb cannot redraw: plain lines, no escape at all.
  assert.not.match(steps(`FORCE_COLOR=0 ${mod()} eval ds`).replace(/\x1b\[\?25[lh]/g, ''), /\x1b\[[0-9;]*m/)
  const dumb = steps(`TERM=dumb ${mod()} eval ds > /dev/null`)
  assert.match(dumb, '[COMPLETED] Scoring: 2/2 images')
  assert.not.match(dumb, '\x1b')
})

test('a second signal while the steps (eval) are drawn ends the process with the cursor shown again', async () => {
  // Stopped first, so that both signals arrive together while listr2 draws (and holds process.stderr.write); without
  // CI set, which makes listr2 print plain lines instead of drawing. mod runs below a shell of its own, not as
  // script's child: script stops itself when its child stops (to pass job control on) and, stopped, never saw mod
  // end (a loaded machine hung the test 4 times in 40 this way, mod long gone).
  const line = `sh -c ${shellWord(`echo $$ > eval.pid; exec env -u CI ${mod()} eval ds-long > /dev/null`)}; exit $?`
  const {shown, code} = await underPtyActing(line, 'eval.pid', /\x1b\[\?25l/, (pid) => {
    for (const signal of ['SIGSTOP', 'SIGINT', 'SIGTERM', 'SIGCONT'] as const) process.kill(pid, signal)
  })
  // The two arrive together on SIGCONT, in an order the kernel chooses: the run ends of the second (130 or 143).
  assert.ok(code === 130 || code === 143, `${code}: ${shown}`)
  assert.ok(shown.lastIndexOf('\x1b[?25h') > shown.lastIndexOf('\x1b[?25l'), JSON.stringify(shown.slice(-300)))
  assert.not.match(shown, 'Error')
})

test('Ctrl-Z (SIGTSTP) while the steps (eval) are drawn shows the cursor at the prompt; going on hides it again', async () => {
  // A job of a shell with job control, as at a prompt: its own process group, whose parent (bash) is in another of
  // the same session. (The kernel drops SIGTSTP to a group with no such parent.) The job's shell records its group
  // and mod's exit code; bash waits for the code, since a stopped job hands it back the terminal.
  const job = `echo $$ > tstp.pid; env -u CI ${mod()} eval ds-long > /dev/null; echo $? > tstp.rc`
  const line = `bash -c ${shellWord(`set -m; sh -c ${shellWord(job)}; while [ ! -e tstp.rc ]; do sleep 0.05; done`)}`
  let whileStopped = ''
  const {shown} = await underPtyActing(line, 'tstp.pid', /\x1b\[\?25l/, async (group, sofar) => {
    // What Ctrl-Z and then fg send: to the whole group.
    process.kill(-group, 'SIGTSTP')
    const node = Number(readFileSync(`/proc/${group}/task/${group}/children`, 'utf8').trim())
    // The state letter after the command's name in /proc/PID/stat: T once stopped.
    const deadline = Date.now() + 10_000
    while (!/\) T /.test(readFileSync(`/proc/${node}/stat`, 'utf8'))) {
      if (Date.now() > deadline) throw new Error('eval did not stop on SIGTSTP')
      await new Promise((r) => setTimeout(r, 20))
    }
    // What it wrote before it stopped may still be on its way through the terminal to script's output: waited for
    // (at most 5 s) until the cursor is shown after the last hiding, which the assertion below checks.
    const shownAgain = () => sofar().lastIndexOf('\x1b[?25h') > sofar().lastIndexOf('\x1b[?25l')
    for (const until = Date.now() + 5000; !shownAgain() && Date.now() < until; ) await new Promise((r) => setTimeout(r, 20))
    whileStopped = sofar()
    process.kill(-group, 'SIGCONT')
    // Once it hides the cursor again to go on drawing, Ctrl-C: the run need not score every image.
    while (sofar().lastIndexOf('\x1b[?25l') < whileStopped.length) {
      if (Date.now() > deadline + 20_000) throw new Error('eval did not go on drawing after SIGCONT')
      await new Promise((r) => setTimeout(r, 20))
    }
    process.kill(node, 'SIGINT')
  })
  assert.is(readFileSync(join(dir.path, 'tstp.rc'), 'utf8'), '130\n')
  assert.ok(whileStopped.lastIndexOf('\x1b[?25h') > whileStopped.lastIndexOf('\x1b[?25l'), JSON.stringify(whileStopped.slice(-300)))
  // Hidden again for the redraws after it went on, then shown at the end of the run.
  assert.ok(shown.lastIndexOf('\x1b[?25l') >= whileStopped.length, JSON.stringify(shown.slice(whileStopped.length, whileStopped.length + 300)))
  assert.ok(shown.lastIndexOf('\x1b[?25h') > shown.lastIndexOf('\x1b[?25l'))
})

test('Ctrl-Z (SIGTSTP) during a scan clears its progress line before the shell says it stopped; going on (fg) draws it again', async () => {
  // A job of a shell with job control, as the steps' test above, but mod itself the job (exec), as when typed at a
  // prompt: the shell reports the job stopped once mod has. The scan waits on stdin (a FIFO nothing writes to) once
  // its images are done, its line on the screen, so that only going on draws it again.
  const job = `echo $$ > scan-tstp.pid; exec ${mod()} scan imgs/1*.png - ${IDLE_STDIN} > /dev/null`
  const line = `bash -c ${shellWord(`set -m; sh -c ${shellWord(job)}; while kill -0 $(cat scan-tstp.pid) 2>/dev/null; do sleep 0.05; done`)}`
  let whileStopped = ''
  let goneOn = ''
  await underPtyActing(line, 'scan-tstp.pid', /Scanning \d+ of \d+\+?: 100 scanned/, async (pid, sofar) => {
    process.kill(-pid, 'SIGTSTP')
    // The shell's line saying so (what mod wrote before it stopped is ahead of it).
    for (const until = Date.now() + 10_000; !sofar().includes('Stopped'); ) {
      if (Date.now() > until) throw new Error(`no job stopped: ${JSON.stringify(sofar().slice(-300))}`)
      await new Promise((r) => setTimeout(r, 20))
    }
    whileStopped = sofar()
    process.kill(-pid, 'SIGCONT')
    for (const until = Date.now() + 5000; !sofar().slice(whileStopped.length).includes('Scanning') && Date.now() < until; )
      await new Promise((r) => setTimeout(r, 20))
    goneOn = sofar().slice(whileStopped.length)
    process.kill(pid, 'SIGINT')
  })
  // The line drawn last is cleared before the shell's "Stopped", not left there with its count frozen.
  const last = whileStopped.slice(whileStopped.lastIndexOf('Scanning'))
  assert.match(last, /^Scanning[^\r]*\r\r\x1b\[2K[^]*Stopped/, JSON.stringify(last))
  assert.match(goneOn, /\r\x1b\[2KScanning \d+ of \d+\+?: 100 scanned/, JSON.stringify(goneOn))
})

test('a terminal that names itself monochrome (TERM=xterm-mono) gets no colour, unless --color asks for it', () => {
  // The test host's FORCE_COLOR=0, and CI (chalk colours nothing under an unknown CI), would decide it: taken out,
  // as a user's terminal has neither.
  const sgr = /\x1b\[[0-9;]*m/
  const line = (term: string, more = '') => underPty(`env -u FORCE_COLOR -u CI TERM=${term} ${mod()} scan imgs/001.png${more}`)
  assert.match(line('xterm'), sgr)
  assert.not.match(line('xterm-mono'), sgr)
  assert.match(line('xterm-mono', ' --color'), sgr)
})

test('NO_COLOR and FORCE_COLOR both set: no Node.js warning across the progress line', () => {
  const shown = underPty(`${envPrefix} NO_COLOR=1 FORCE_COLOR=1 ${shellWord(process.execPath)} ${shellWord(BIN)} scan imgs/00*.png > /dev/null`)
  assert.match(shown, 'scanned:')
  assert.not.match(shown, 'Warning')
})

test('the path - with stdin a terminal is refused at once (exit 2, one line), for scan, hash and policy validate', () => {
  for (const command of ['scan', 'hash']) {
    const shown = underPty(`${mod()} ${command} - imgs/000.png; echo mod-exit=$?`)
    assert.is(shown.replace(/\r/g, ''), `mod: usage: the path - reads one image from stdin, and stdin is a terminal: pipe the image in (mod ${command} - < photo.jpg)\nmod-exit=2\n`)
  }
  const shown = underPty(`${mod()} policy validate -; echo mod-exit=$?`)
  assert.is(shown.replace(/\r/g, ''), 'mod: usage: the file - reads the policy from stdin, and stdin is a terminal: pipe it in (mod policy validate - < policy.yaml)\nmod-exit=2\n')
})

test('--files-from - with stdin a terminal says it reads typed paths and how to end them, then scans what was typed', async () => {
  const screen = await inPane(dir.path, `${mod()} scan --files-from - --ndjson > typed.ndjson; echo EXIT=$?; sleep 60`, SIZE, async (pane) => {
    await pane.until(/reading the paths to scan from the terminal, one a line; end with Ctrl-D/)
    pane.keys('imgs/001.png', 'Enter', 'C-d')
    return pane.until(/EXIT=\d+/)
  })
  assert.match(screen, /^mod: reading the paths to scan from the terminal, one a line; end with Ctrl-D\nimgs\/001\.png\n/)
  assert.match(screen, /EXIT=0/)
  assert.is(JSON.parse(readFileSync(join(dir.path, 'typed.ndjson'), 'utf8')).source, 'imgs/001.png')
})

test('Ctrl-C while the scan waits for an input that does not end (stdin a FIFO nothing writes to) stops it at once, exit 130', async () => {
  // stdin first: no result can be printed before it, so the scan is waiting on it when the key comes.
  const screen = await inPane(dir.path, `${mod()} scan - imgs/1*.png ${IDLE_STDIN} > /dev/null; echo EXIT=$?; sleep 60`, SIZE, async (pane) => {
    await pane.until(/Scanning/)
    pane.keys('C-c')
    return pane.until(/EXIT=\d+/, 10_000)
  })
  assert.match(screen.trim(), /^mod: stopped by SIGINT after 0 of \d+\+? files: 0 scanned: 0 safe, 0 unsafe, 0 errors\nEXIT=130$/)
})

test('scan-video on a terminal counts frames against the estimated total; Ctrl-C says how far it got, exit 130', async () => {
  const screen = await inPane(dir.path, `${mod()} scan-video long.mp4 --fps 5 > /dev/null; echo EXIT=$?; sleep 60`, SIZE, async (pane) => {
    const running = await pane.until(/Scanning frame \d+ of ~600 \(\d+\.\d s\) of long\.mp4/)
    assert.match(running, /Scanning frame \d+ of ~600 \(\d+\.\d s\) of long\.mp4/)
    pane.keys('C-c')
    return pane.until(/EXIT=\d+/)
  })
  assert.match(screen.trim(), /^mod: stopped by SIGINT after frame \d+ of ~600 \(\d+\.\d s\) of long\.mp4\nEXIT=130$/)
})

test('a progress line naming wide characters is cut to the terminal, its count kept, so redrawing it leaves no row behind', async () => {
  const narrow = {width: 40, height: 20}
  // Redrawn every 80 ms as its 600 frames are scored: a line that wrapped would leave a row for each redraw.
  const screen = await inPane(dir.path, `${mod()} scan-video ${WIDE_NAME} --fps 5 > /dev/null; echo EXIT=$?; sleep 60`, narrow, async (pane) => {
    // The name, not the count, is what the terminal's width cuts.
    assert.match(await pane.until(/Scanning frame \d+ of ~600/), /Scanning frame \d+ of ~600 \(\d+\.\d s\)/)
    return pane.until(/EXIT=\d+/)
  })
  assert.not.match(screen, 'Scanning')
  assert.match(screen, /EXIT=0/)
})

test.run()
