// The smoke checks of test/smoke/run.sh, run by the Node.js release under test (process.execPath), which also runs
// every `mod` process started here. Plain JavaScript with no dependency, so that it needs no loader on that Node.
import {spawn} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

const root = join(import.meta.dirname, '..', '..')
const photos = join(root, 'test', 'fixtures', 'photos')
const env = {
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_'))),
  MOD_CACHE_DIR: process.env.MOD_CACHE_DIR,
  ORT_DISABLE_TELEMETRY: '1',
  NO_COLOR: '1',
}

function check(ok, what, detail = '') {
  if (!ok) throw new Error(`${what}${detail ? `\n${detail}` : ''}`)
  console.log(`smoke:   ok ${what}`)
}

/** Runs `mod` with this Node to its end. */
function mod(args) {
  return new Promise((done) => {
    const child = spawn(process.execPath, [join(root, 'bin', 'run.js'), ...args], {cwd: root, env})
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('close', (code) => done({code, stdout, stderr}))
  })
}

// The server started by main, stopped here when a check fails.
let server

async function main() {
  // The native modules load under this Node (N-API): sharp decodes the photos, onnxruntime-node runs the NSFW model.
  const scan = await mod(['scan', photos])
  const safe = scan.stdout.split('\n').filter((l) => l.startsWith('SAFE ')).length
  check(scan.code === 0 && safe === 14, `scan test/fixtures/photos: exit ${scan.code}, ${safe} SAFE lines of 14`, scan.stdout + scan.stderr)

  server = spawn(process.execPath, [join(root, 'bin', 'run.js'), 'serve', '--host', '127.0.0.1', '--port', '0'], {cwd: root, env})
  let log = ''
  const stopped = new Promise((done) => server.on('close', (code) => done(code)))
  const base = await new Promise((done, reject) => {
    const timer = setTimeout(() => reject(new Error(`mod serve did not listen within 60 s:\n${log}`)), 60_000)
    server.stderr.on('data', (d) => {
      log += d
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(log)
      if (m) {
        clearTimeout(timer)
        done(m[1])
      }
    })
    server.on('close', (code) => {
      clearTimeout(timer)
      reject(new Error(`mod serve exited ${code}:\n${log}`))
    })
  })
  const health = await fetch(`${base}/health`)
  const body = await health.json()
  check(health.status === 200 && body.model_loaded === true, `mod serve on ${base}: GET /health ${health.status}, model_loaded ${body.model_loaded}`)

  const photo = (name) => new Blob([readFileSync(join(photos, name))], {type: 'image/jpeg'})
  const one = new FormData()
  one.append('file', photo('coffee.jpg'), 'coffee.jpg')
  const moderated = await fetch(`${base}/v1/moderate`, {method: 'POST', body: one})
  const result = await moderated.json()
  check(moderated.status === 200 && result.is_safe === true, `POST /v1/moderate coffee.jpg: ${moderated.status}, is_safe ${result.is_safe}`, JSON.stringify(result))

  const two = new FormData()
  two.append('files', photo('rocket.jpg'), 'rocket.jpg')
  two.append('files', photo('horse.jpg'), 'horse.jpg')
  const submitted = await fetch(`${base}/v1/jobs/images`, {method: 'POST', body: two})
  const location = submitted.headers.get('location')
  check(submitted.status === 202 && location !== null, `POST /v1/jobs/images of 2 files: ${submitted.status}, Location ${location}`)
  const deadline = Date.now() + 60_000
  let job
  do {
    if (Date.now() > deadline) throw new Error(`the job did not end within 60 s: ${JSON.stringify(job)}`)
    await new Promise((r) => setTimeout(r, 100))
    job = await (await fetch(`${base}${location}`)).json()
  } while (job.status === 'queued' || job.status === 'running')
  check(job.status === 'done', `GET ${location}: ${job.status}`, JSON.stringify(job))
  const lines = (await (await fetch(`${base}${job.results}`)).text()).split('\n').filter(Boolean).map((l) => JSON.parse(l))
  const seen = lines.map((l) => `${l.index}:${l.source}:${l.is_safe}`).join(' ')
  check(seen === '0:rocket.jpg:true 1:horse.jpg:true', `GET ${job.results}: ${seen}`, JSON.stringify(lines))
  server.kill('SIGTERM')
  const code = await stopped
  server = undefined
  check(code === 0, `mod serve stopped on SIGTERM: exit ${code}`, log)
}

try {
  await main()
} catch (error) {
  server?.kill('SIGKILL')
  console.error(`smoke: FAILED: ${error.message}`)
  process.exitCode = 1
}
