// deploy/ is checked offline: the Kubernetes manifests against the Kubernetes API schemas (the
// kubernetes-models package validates each object of a known kind), and the compose file's structure
// (docker compose is not installed where the tests run). The Redis start-up scripts of both are run with the
// real redis-server to show that the password wiring works.
import {spawn, spawnSync} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {Queue} from 'bullmq'
import {Redis} from 'ioredis'

import {Deployment} from 'kubernetes-models/apps/v1'
import {HorizontalPodAutoscaler} from 'kubernetes-models/autoscaling/v2'
import {PersistentVolumeClaim, Service} from 'kubernetes-models/v1'
import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {parse, parseAllDocuments} from 'yaml'

import {ROOT} from './helpers/cli.js'
import {QUEUE_NAME as VIDEO_QUEUE} from '../src/server/jobs/bullmq.js'
import {QUEUE_NAME as IMAGE_QUEUE} from '../src/server/jobs/images/redis.js'
import {freePort, REDIS_SERVER, startRedis} from './helpers/redis.js'

const MODELS: Record<string, new (data: any) => {validate(): void}> = {
  'apps/v1 Deployment': Deployment,
  'autoscaling/v2 HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'v1 PersistentVolumeClaim': PersistentVolumeClaim,
  'v1 Service': Service,
}

function manifests(file: string): any[] {
  return parseAllDocuments(readFileSync(join(ROOT, 'deploy', 'k8s', file), 'utf8')).map((d) => {
    assert.equal(d.errors, [], file)
    return d.toJS()
  })
}

const all = [...manifests('mod.yaml'), ...manifests('redis.yaml')]
const named = (kind: string, name: string) => all.find((m) => m.kind === kind && m.metadata.name === name)
const envOf = (d: any) => Object.fromEntries(d.spec.template.spec.containers[0].env.map((e: any) => [e.name, e.value ?? e.valueFrom]))

test('every Kubernetes object is valid against the schema of its kind', () => {
  for (const m of all) {
    const Model = MODELS[`${m.apiVersion} ${m.kind}`]
    assert.ok(Model, `${m.apiVersion} ${m.kind} is a kind this check knows`)
    new Model(m).validate()
  }
  assert.equal(all.map((m) => `${m.kind}/${m.metadata.name}`).sort(), [
    'Deployment/mod-redis',
    'Deployment/mod-serve',
    'Deployment/mod-worker',
    'HorizontalPodAutoscaler/mod-serve',
    'PersistentVolumeClaim/mod-jobs',
    'PersistentVolumeClaim/mod-redis',
    'Service/mod',
    'Service/mod-redis',
  ])
})

test('keda.yaml scales the mod worker Deployment on the waiting lists of both job queues, with its Redis and password', () => {
  const [scaled, ...more] = manifests('keda.yaml')
  assert.is(more.length, 0)
  assert.equal([scaled.apiVersion, scaled.kind, scaled.metadata.name], ['keda.sh/v1alpha1', 'ScaledObject', 'mod-worker'])
  const target = named(scaled.spec.scaleTargetRef.kind, scaled.spec.scaleTargetRef.name)
  assert.equal(target.spec.template.spec.containers[0].args, ['mod', 'worker'])
  const service = named('Service', 'mod-redis')
  const envNames = target.spec.template.spec.containers[0].env.map((e: any) => e.name)
  assert.equal(
    scaled.spec.triggers.map((t: any) => [t.type, t.metadata.address, envNames.includes(t.metadata.passwordFromEnv), t.metadata.listName]),
    [IMAGE_QUEUE, VIDEO_QUEUE].map((queue) => ['redis', `${service.metadata.name}:${service.spec.ports[0].port}`, true, `bull:${queue}:wait`]),
  )
  assert.ok(scaled.spec.minReplicaCount >= 1 && scaled.spec.maxReplicaCount > scaled.spec.minReplicaCount)
})

test("the lists keda.yaml watches are where BullMQ keeps a queue's waiting entries", async () => {
  const redis = await startRedis()
  const connection = new Redis(redis.url, {maxRetriesPerRequest: null})
  try {
    for (const name of [IMAGE_QUEUE, VIDEO_QUEUE]) {
      const queue = new Queue(name, {connection})
      await queue.add('x', {})
      await queue.add('y', {})
      assert.is(await connection.llen(`bull:${name}:wait`), 2, name)
      await queue.close()
    }
  } finally {
    connection.disconnect()
    await redis.remove()
  }
})

test('an invalid object is caught by the same check', () => {
  const broken = structuredClone(named('Deployment', 'mod-serve'))
  broken.spec.replicas = 'two'
  assert.throws(() => new Deployment(broken).validate())
})

test('serve pods are ready on /ready behind the Service and scaled by the autoscaler; workers run mod worker', () => {
  const serve = named('Deployment', 'mod-serve')
  const worker = named('Deployment', 'mod-worker')
  const container = serve.spec.template.spec.containers[0]
  assert.equal(container.readinessProbe.httpGet, {path: '/ready', port: 'http'})
  assert.equal(container.livenessProbe.httpGet, {path: '/health', port: 'http'})
  assert.equal(worker.spec.template.spec.containers[0].args, ['mod', 'worker'])
  assert.equal(named('Service', 'mod').spec.selector, serve.spec.selector.matchLabels)
  assert.equal(named('HorizontalPodAutoscaler', 'mod-serve').spec.scaleTargetRef, {apiVersion: 'apps/v1', kind: 'Deployment', name: 'mod-serve'})
  for (const d of [serve, worker]) {
    assert.is(envOf(d).MOD_JOB_STORAGE, '/jobs')
    assert.equal(d.spec.template.spec.volumes, [{name: 'jobs', persistentVolumeClaim: {claimName: 'mod-jobs'}}])
    assert.equal(d.spec.template.spec.containers[0].volumeMounts, [{name: 'jobs', mountPath: '/jobs'}])
  }
  assert.equal(named('PersistentVolumeClaim', 'mod-jobs').spec.accessModes, ['ReadWriteMany'])
  assert.equal(named('Service', 'mod-redis').spec.ports[0].port, 6379)
})

test('the compose file runs Redis, two mod serve and one mod worker on one shared jobs volume', () => {
  const compose = parse(readFileSync(join(ROOT, 'deploy', 'compose.yaml'), 'utf8'), {merge: true})
  const s = compose.services
  assert.equal(Object.keys(s).sort(), ['jobs-folder', 'redis', 'serve-a', 'serve-b', 'worker'])
  for (const name of ['serve-a', 'serve-b', 'worker']) {
    assert.is(s[name].environment.MOD_JOB_STORAGE, '/jobs', name)
    assert.equal(s[name].volumes, ['jobs:/jobs'], name)
    assert.equal(s[name].depends_on.redis, {condition: 'service_healthy'}, name)
  }
  assert.is(s['serve-a'].command, undefined, 'the image runs mod serve by default')
  assert.equal(s.worker.command, ['mod', 'worker'])
  assert.equal(s['jobs-folder'].volumes, ['jobs:/jobs'])
  assert.ok('jobs' in compose.volumes)
  assert.match(s.redis.command[2], /--appendonly yes/)
})

test('Kubernetes: Redis asks for the password of the Secret, and the pods put the same one into MOD_REDIS_URL', () => {
  const secret = {secretKeyRef: {name: 'mod', key: 'redis-password'}}
  for (const d of [named('Deployment', 'mod-serve'), named('Deployment', 'mod-worker')]) {
    const env = d.spec.template.spec.containers[0].env.map((e: any) => e.name)
    assert.equal(envOf(d).REDIS_PASSWORD, secret)
    assert.is(envOf(d).MOD_REDIS_URL, 'redis://:$(REDIS_PASSWORD)@mod-redis:6379')
    // Kubernetes only replaces $(NAME) by a variable listed before it.
    assert.ok(env.indexOf('REDIS_PASSWORD') < env.indexOf('MOD_REDIS_URL'))
  }
  const redis = named('Deployment', 'mod-redis').spec.template.spec.containers[0]
  assert.equal(envOf(named('Deployment', 'mod-redis')).REDISCLI_AUTH, secret)
  assert.equal(redis.command.slice(0, 2), ['sh', '-c'])
  assert.equal(redis.readinessProbe.exec.command, ['sh', '-c', 'redis-cli ping | grep -qx PONG'])
})

test('compose: Redis asks for MOD_REDIS_PASSWORD, which has no default, and mod reaches it with that password', () => {
  const s = parse(readFileSync(join(ROOT, 'deploy', 'compose.yaml'), 'utf8'), {merge: true}).services
  const required = '${MOD_REDIS_PASSWORD:?set MOD_REDIS_PASSWORD}'
  assert.is(s.redis.environment.REDISCLI_AUTH, required)
  for (const name of ['serve-a', 'serve-b', 'worker']) {
    assert.is(s[name].environment.MOD_REDIS_URL, `redis://:${required}@redis:6379`, name)
  }
  assert.equal(s.redis.command.slice(0, 2), ['sh', '-c'])
  assert.equal(s.redis.healthcheck.test, ['CMD-SHELL', 'redis-cli ping | grep -qx PONG'])
})

/**
 * Runs a deploy file's Redis start-up script and health check with the real redis-server and redis-cli (on a
 * free port, in a temporary folder) and the password in REDISCLI_AUTH, as the container would.
 */
async function redisOf(script: string[], probe: string[]): Promise<{port: number; probe(auth?: string): number; stop(): Promise<void>}> {
  const tmp = mkdtempSync(join(tmpdir(), 'mod-deploy-redis-'))
  const port = await freePort()
  // The scripts use the default port and folder: wrappers first on PATH point them at the test's.
  const real = (name: string) => spawnSync('sh', ['-c', `command -v ${name}`], {encoding: 'utf8'}).stdout.trim()
  writeFileSync(join(tmp, 'redis-server'), `#!/bin/sh\nexec ${real(REDIS_SERVER)} "$@" --port ${port} --bind 127.0.0.1 --dir ${tmp}\n`, {mode: 0o755})
  writeFileSync(join(tmp, 'redis-cli'), `#!/bin/sh\nexec ${real('redis-cli')} -p ${port} "$@"\n`, {mode: 0o755})
  const env = {...process.env, PATH: `${tmp}:${process.env.PATH}`, REDISCLI_AUTH: 'Secret123'}
  const child = spawn(script[0], script.slice(1), {env, stdio: ['ignore', 'pipe', 'inherit']})
  await new Promise<void>((resolve, reject) => {
    let out = ''
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      out += d
      if (out.includes('Ready to accept connections')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`redis exited (${code}): ${out}`)))
  })
  return {
    port,
    probe: (auth) => spawnSync(probe[0], probe.slice(1), {env: {...env, REDISCLI_AUTH: auth ?? ''}}).status ?? -1,
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
      rmSync(tmp, {recursive: true, force: true})
    },
  }
}

/** PING through ioredis with this URL: 'PONG', or the error's message. */
async function ping(url: string): Promise<string> {
  const client = new Redis(url, {maxRetriesPerRequest: 0, lazyConnect: true, enableReadyCheck: false, retryStrategy: () => null})
  client.on('error', () => {})
  try {
    await client.connect()
    return await client.ping()
  } catch (e) {
    return (e as Error).message
  } finally {
    client.disconnect()
  }
}

test('the Redis of each deploy file, started as written, refuses clients without the password and answers the URL mod is given', async () => {
  const s = parse(readFileSync(join(ROOT, 'deploy', 'compose.yaml'), 'utf8'), {merge: true}).services
  const k8s = named('Deployment', 'mod-redis').spec.template.spec.containers[0]
  const runs = [
    {
      // compose writes $$ for a $ that reaches the shell.
      script: s.redis.command.map((part: string) => part.replaceAll('$$', '$')),
      probe: ['sh', '-c', s.redis.healthcheck.test[1]],
      url: (port: number) => s.worker.environment.MOD_REDIS_URL.replace('${MOD_REDIS_PASSWORD:?set MOD_REDIS_PASSWORD}', 'Secret123').replace('@redis:6379', `@127.0.0.1:${port}`),
    },
    {
      script: k8s.command,
      probe: k8s.readinessProbe.exec.command,
      url: (port: number) =>
        envOf(named('Deployment', 'mod-worker')).MOD_REDIS_URL.replace('$(REDIS_PASSWORD)', 'Secret123').replace('@mod-redis:6379', `@127.0.0.1:${port}`),
    },
  ]
  for (const run of runs) {
    const redis = await redisOf(run.script, run.probe)
    try {
      assert.is(await ping(`redis://127.0.0.1:${redis.port}`), 'NOAUTH Authentication required.')
      assert.is(await ping(run.url(redis.port)), 'PONG')
      assert.is(redis.probe('Secret123'), 0, 'healthy with the password')
      assert.is(redis.probe(), 1, 'not healthy without it')
    } finally {
      await redis.stop()
    }
  }
})

test.run()
