// deploy/ is checked offline: the Kubernetes manifests against the Kubernetes API schemas (the
// kubernetes-models package validates each object of a known kind), and the compose file's structure
// (docker compose is not installed where the tests run).
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import {Deployment} from 'kubernetes-models/apps/v1'
import {HorizontalPodAutoscaler} from 'kubernetes-models/autoscaling/v2'
import {PersistentVolumeClaim, Service} from 'kubernetes-models/v1'
import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {parse, parseAllDocuments} from 'yaml'

import {ROOT} from './helpers/cli.js'

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
    assert.is(envOf(d).MOD_REDIS_URL, 'redis://mod-redis:6379')
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
    assert.is(s[name].environment.MOD_REDIS_URL, 'redis://redis:6379', name)
    assert.is(s[name].environment.MOD_JOB_STORAGE, '/jobs', name)
    assert.equal(s[name].volumes, ['jobs:/jobs'], name)
    assert.equal(s[name].depends_on.redis, {condition: 'service_healthy'}, name)
  }
  assert.is(s['serve-a'].command, undefined, 'the image runs mod serve by default')
  assert.equal(s.worker.command, ['mod', 'worker'])
  assert.equal(s['jobs-folder'].volumes, ['jobs:/jobs'])
  assert.ok('jobs' in compose.volumes)
  assert.ok(s.redis.command.includes('--appendonly'))
})

test.run()
