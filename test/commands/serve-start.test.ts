/**
 * `mod serve` with an address it cannot serve on stops with one line and exit 2, before any warning or log line
 * that would suggest a server on its way (the warning about serving without a key came first, then the failure).
 */
import {createServer, type Server} from 'node:net'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {runCli, TOY_MODEL} from '../helpers/cli.js'

const HOST_FORM = 'a host name or IP address, without a port or scheme: 127.0.0.1, 0.0.0.0, ::1 (or [::1]), localhost'

const serve = (args: string[], env: Record<string, string> = {}) => runCli(['serve', ...args], {env: {MOD_MODEL_DIR: TOY_MODEL, ...env}})

test('a host that is no host is refused alone, naming MOD_HOST or --host and what they take', async () => {
  for (const host of ['999.1.1.1', 'localhost:8000', '[::1]:8000', '[127.0.0.1]', '[localhost]', 'http://x', ' ', 'a b', '256.0.0.1']) {
    const r = await serve(['--port', '0'], {MOD_HOST: host})
    assert.is(r.stderr, `mod: invalid_config: MOD_HOST=${JSON.stringify(host)} is not valid: expected ${HOST_FORM}\n`, host)
    assert.is(r.stdout, '', host)
    assert.is(r.code, 2, host)
  }
  const typed = await serve(['--host', '999.1.1.1', '--port', '0'])
  assert.is(typed.stderr, `mod: usage: --host="999.1.1.1" is not valid: expected ${HOST_FORM}\n`)
  assert.is(typed.code, 2)
})

test('an address of no interface of this machine is one line before the warning about serving without a key', async () => {
  // 192.0.2.1 is TEST-NET-1: never this machine's, and listening on it sends nothing.
  const r = await serve(['--host', '192.0.2.1', '--port', '0'])
  assert.is(
    r.stderr,
    'mod: invalid_config: cannot listen on 192.0.2.1: 192.0.2.1 is not an address of this machine (EADDRNOTAVAIL); give --host or MOD_HOST one of its addresses, or 0.0.0.0 for all\n',
  )
  assert.is(r.code, 2)
})

function hold(): Promise<{server: Server; port: number}> {
  const server = createServer()
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({server, port: (server.address() as {port: number}).port})))
}

test('a port in use is one line naming the address and exit 2, also with workers, nothing logged before it', async () => {
  const {server, port} = await hold()
  try {
    const line = `mod: invalid_config: cannot listen on 127.0.0.1:${port}: the port is in use by another process (EADDRINUSE); stop it, or choose another port with --port or MOD_PORT (0 picks a free one)\n`
    for (const args of [['--port', String(port)], ['--port', String(port), '--workers', '2']]) {
      const r = await serve(args, {MOD_LOG_LEVEL: 'debug'})
      assert.is(r.stderr, line, args.join(' '))
      assert.is(r.stdout, '')
      assert.is(r.code, 2)
    }
  } finally {
    server.close()
  }
})

test('--port past 65535 or negative is a usage line', async () => {
  for (const port of ['70000', '-1']) {
    const r = await serve([`--port=${port}`])
    assert.is(r.stderr, `mod: usage: --port=${JSON.stringify(port)} is not valid: expected a whole number from 0 to 65535\n`)
    assert.is(r.code, 2)
  }
})

test.run()
