import {execFileSync} from 'node:child_process'

/** A clean git for test repositories: no user or system configuration, a fixed author. */
export const CLEAN_GIT_ENV = {
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 't',
  GIT_AUTHOR_EMAIL: 't@example.org',
  GIT_COMMITTER_NAME: 't',
  GIT_COMMITTER_EMAIL: 't@example.org',
}

/** Runs git in `cwd` with that environment; its stdout. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {cwd, env: {...process.env, ...CLEAN_GIT_ENV}, encoding: 'utf8'})
}
