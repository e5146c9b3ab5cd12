// Debian's chromium, headless, as every test that renders a page starts it: no sandbox (tests may run as root), no
// GPU, and none of the background traffic a browser starts on its own (no test reaches beyond 127.0.0.1).
import {chromium, type Browser} from 'playwright-core'

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  })
}
