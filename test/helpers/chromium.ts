// Debian's chromium, headless, as every test that renders a page starts it: no sandbox (tests may run as root), no
// GPU, and none of the background traffic a browser starts on its own (no test reaches beyond 127.0.0.1).
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {chromium, type Browser} from 'playwright-core'

export async function launchChromium(): Promise<Browser> {
  // A home of its own, removed once it closes: chromium keeps its crash reports' settings in ~/.config/chromium and
  // GTK its dconf cache in ~/.cache, which would otherwise land in the home of whoever runs the tests.
  const home = mkdtempSync(join(tmpdir(), 'mod-chromium-home-'))
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    env: {...process.env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), XDG_CACHE_HOME: join(home, '.cache')},
  })
  browser.on('disconnected', () => rmSync(home, {recursive: true, force: true}))
  return browser
}
