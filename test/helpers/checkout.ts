import {execFileSync} from 'node:child_process'
import {chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {ROOT} from './cli.js'
import {git} from './git.js'

/**
 * What the ready-made CI steps install `mod` from: a clone of this repository at a tag. The recipes run
 * `npm ci --ignore-scripts`, `npm run build` and `npm prune --omit=dev` in it.
 */

/**
 * A git repository whose tag `tag` holds this working tree as it is (tracked files and new ones git does not
 * ignore: uncommitted changes are tested too), made in `dir` without copying the repository's objects.
 */
export function repositoryAtTag(dir: string, tag = 'v0.0.0-test'): {path: string; tag: string} {
  const path = join(dir, 'mod.git-clone')
  git(dir, 'clone', '-q', '--shared', '--no-checkout', ROOT, path)
  git(path, 'read-tree', 'HEAD')
  git(path, `--work-tree=${ROOT}`, 'add', '-A')
  git(path, `--work-tree=${ROOT}`, 'commit', '-q', '--allow-empty', '-m', 'the working tree under test')
  git(path, 'tag', tag)
  // What clones it (pre-commit) gets the objects unzipped: a second of CPU less for the models' 40 MB.
  git(path, 'config', 'pack.compression', '0')
  return {path, tag}
}

/**
 * The files of `repository` at `tag` extracted into `into`, as GitHub downloads an action at its ref (no .git). The
 * archive is made once, beside the repository (in the test's folder), not kept in memory: the test processes run
 * many files one after another, and a 50 MB archive held to the run's end is copied by every process they start.
 */
export function extractTag(repository: {path: string; tag: string}, into: string): string {
  const archive = `${repository.path}-${repository.tag}.tar`
  if (!existsSync(archive)) execFileSync('git', ['-C', repository.path, 'archive', '-o', archive, repository.tag])
  mkdirSync(into, {recursive: true})
  execFileSync('tar', ['-x', '-C', into, '-f', archive])
  return into
}

/**
 * TEST_REAL_NPM=1 runs the recipes' real npm, offline from npm's cache (which the repository's own `npm ci` filled):
 * about 80 s for `npm ci` and 45 s for the build on a busy 2-core machine, too slow for every run. Otherwise an npm
 * stand-in on PATH records each call and does what the call would: `ci` links this repository's node_modules,
 * `run build` copies its dist (so `npm run build` must have run), `prune` keeps all.
 */
export const REAL_NPM = process.env.TEST_REAL_NPM === '1'

/** A folder for PATH holding the npm stand-in (none with REAL_NPM), and the calls it recorded: [folder, args]. */
export function npmStandIn(dir: string): {path: string; env: Record<string, string>; calls: () => string[][]} {
  const bin = join(dir, 'npm-bin')
  const log = join(dir, 'npm-calls.tsv')
  mkdirSync(bin, {recursive: true})
  if (REAL_NPM) return {path: '', env: {npm_config_offline: 'true'}, calls: () => []}
  writeFileSync(
    join(bin, 'npm'),
    `#!/bin/sh
printf '%s\\t%s\\n' "$PWD" "$*" >> '${log}'
case "$1" in
  ci) rm -rf node_modules && ln -s '${join(ROOT, 'node_modules')}' node_modules ;;
  run) [ "$2" = build ] && rm -rf dist && cp -R '${join(ROOT, 'dist')}' dist ;;
  prune) ;;
  *) echo "npm stand-in: npm $* is not a call of the recipes" >&2; exit 1 ;;
esac
`,
  )
  chmodSync(join(bin, 'npm'), 0o755)
  const calls = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => l.split('\t')) : [])
  return {path: bin, env: {}, calls}
}

/** The npm calls that install mod in a checkout, as the action and the hook make them. */
export const INSTALL_CALLS = [
  'ci --ignore-scripts --include=dev --no-audit --no-fund',
  'run build',
  'prune --omit=dev --ignore-scripts --no-audit --no-fund',
]
