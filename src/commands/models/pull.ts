import {join} from 'node:path'

import {Args} from '@oclif/core'

import {ModCommand} from '../../cli/base-command.js'
import {textReporter} from '../../cli/reports/reporter.js'
import {visible} from '../../cli/visible.js'
import {SIGNAL_EXIT_CODES} from '../../cli/errors.js'
import {modelFlags, settingsInput} from '../../cli/flags.js'
import {formatBytes} from '../../cli/format.js'
import {runSteps} from '../../cli/steps.js'
import type {EnvVars} from '../../cli/help.js'
import {readSettings} from '../../lib/config/settings.js'
import {isModError, ModError} from '../../lib/errors.js'
import {loadPresetManifest} from '../../lib/model/presets.js'
import {pullModel, type PullableManifest, type PulledFile, type PullProgress} from '../../lib/model/pull.js'
import {PRESETS} from '../../lib/policy/types.js'
import {ADDONS} from '../../lib/signals/registry.js'
import type {Addon} from '../../lib/signals/signal.js'

const BAR_WIDTH = 24

/** A file's line while it downloads: a bar and its percentage, or the bytes so far when the size is unknown. */
export function downloadBar(p: PullProgress): string {
  if (!p.total) return `${p.file} ${formatBytes(p.received)}`
  const done = Math.min(1, p.received / p.total)
  // Full only when whole, as the percentage is: rounded, 98% showed a full bar.
  const filled = Math.floor(done * BAR_WIDTH)
  return `${p.file} [${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ${Math.floor(done * 100)}% of ${formatBytes(p.total)}`
}

/** A promise with its settling functions (Promise.withResolvers, which Node 20 lacks). */
function deferred<T>(): {promise: Promise<T>; resolve: (value: T) => void; reject: (reason: unknown) => void} {
  let resolve!: (value: T) => void
  let reject!: (reason: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return {promise, resolve, reject}
}

/** The line printed for a file the preset pins no hash for. */
export function firstUseWarning(f: PulledFile): string {
  return `warning: ${f.file} has no pinned sha256 in the preset; trusted on first use (sha256 ${f.sha256}, recorded in manifest.json)`
}

/**
 * What to try when a download fails: the network path, or a copy that needs no download. MOD_MODEL_DIR stands
 * for a CLIP preset only; the add-on is found in the cache folder alone.
 */
function nextSteps(dir: string, proxied: boolean, addon: Addon | undefined): string {
  const proxy = proxied ? 'check HTTPS_PROXY / NO_PROXY' : 'if this network needs a proxy, set HTTPS_PROXY (and NO_PROXY)'
  const copy = addon
    ? `install a copy of the file with \`mod models add ${addon.name} ${addon.offlineCopy.file}\` (${addon.offlineCopy.where}), or copy an installed ${addon.name} folder from another machine into ${dir}`
    : `copy an installed model folder from another machine into ${dir}, or point MOD_MODEL_DIR (--model-dir) at one`
  return `${proxy}; or ${copy}; then run the pull again (a download cut short resumes where it stopped)`
}

export default class ModelsPull extends ModCommand {
  static override description = `Download a model preset into the cache folder, as <cache-dir>/<preset> (default ~/.cache/mod/<preset>).

The presets fast, balanced and accurate are CLIP models (the categories beyond the nudity family need one). ${ADDONS.map((a) => a.help).join('\n\n')}

Every file is checked against the size and sha256 the preset gives and moved into place only when whole; the folder counts as installed once its manifest.json is written, last. A transfer that sends nothing for 60 s, or less than 64 KiB in a minute, stops. An interrupted pull resumes where it stopped when run again; files already installed are not downloaded again.

A file the preset pins no sha256 for is trusted on first use: one warning line on stderr names it and the sha256 downloaded, which the installed manifest.json records (marked first_use; \`mod models list\` shows the counts).

Downloads go through the proxy in HTTPS_PROXY (or HTTP_PROXY), except for the hosts in NO_PROXY.`

  static override examples = [
    '<%= config.bin %> models pull fast',
    '<%= config.bin %> models pull nudenet',
    '$ MOD_CACHE_DIR=/srv/mod <%= config.bin %> models pull accurate',
    '$ HTTPS_PROXY=http://proxy.internal:3128 <%= config.bin %> models pull fast',
  ]

  static override envVars: EnvVars = [
    ['HTTPS_PROXY, HTTP_PROXY', 'proxy for the downloads (lower-case spellings win)'],
    ['NO_PROXY', 'hosts reached without the proxy'],
  ]

  static override exitCodes: [string, string][] = [
    ['0', 'installed (files already in place are kept)'],
    ['2', 'usage or configuration error; the download failed or a file did not match its pinned size or sha256 (run again to resume)'],
    ...SIGNAL_EXIT_CODES,
  ]

  static override args = {
    preset: Args.string({description: 'the preset (or add-on) to download', required: true, options: [...PRESETS, ...ADDONS.map((a) => a.name)]}),
  }

  static override flags = {
    'cache-dir': modelFlags['cache-dir'],
    precision: modelFlags.precision,
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(ModelsPull)
    const preset = args.preset
    const settings = readSettings(settingsInput(flags), process.env).engine
    const dir = join(settings.cacheDir, preset)
    const addon = ADDONS.find((a) => a.name === preset)
    const manifest: PullableManifest = addon ? await addon.manifest() : await loadPresetManifest(preset as (typeof PRESETS)[number])
    // The add-on has one precision; --precision concerns the CLIP encoders.
    const variants = addon !== undefined || settings.precision === 'fp32' ? [] : [settings.precision]
    if (addon?.notice) this.logToStderr(addon.notice)
    const names = [
      ...manifest.files.map((f) => f.path),
      ...variants.flatMap((v) => [manifest.variants?.[v]?.image_encoder.path ?? '', manifest.variants?.[v]?.text_encoder.path ?? '']),
    ]
    const count = names.length
    const unpinned: PulledFile[] = []
    const keptFiles: string[] = []
    // pullModel works through the files in this order: each step waits for its file, and shows its progress.
    const files = names.map(() => deferred<PulledFile>())
    let current = 0
    let setTitle: (title: string) => void = () => {}
    let last: PullProgress | undefined
    let stoppedAfter: string | undefined
    const pulled = pullModel(manifest, dir, {
      signal: this.interrupt.signal,
      variants,
      proxy: settings.proxy,
      onProgress: (p) => {
        last = p
        setTitle(downloadBar(p))
      },
      onFile: (f) => {
        last = undefined
        if (!f.pinned) unpinned.push(f)
        if (f.skipped && f.pinned) keptFiles.push(f.file)
        files[current++]?.resolve(f)
      },
    }).catch((e: unknown) => {
      // How far the file under way got: the next pull resumes its part.
      if (last && last.received > 0 && this.interrupt.signal.aborted) stoppedAfter = `${formatBytes(last.received)} of ${last.file}; run the pull again to resume`
      const failure =
        // Network advice only for a network failure: not for a full disk or another installer.
        isModError(e) && e.code === 'download_failed' && !this.interrupt.signal.aborted && e.context?.local !== true
          ? new ModError('download_failed', `${e.message}; to try next: ${nextSteps(dir, Boolean(settings.proxy.httpsProxy || settings.proxy.httpProxy), addon)}`)
          : e
      for (const f of files.slice(current)) f.reject(failure)
      throw failure
    })
    for (const f of files) f.promise.catch(() => undefined)
    pulled.catch(() => undefined)
    try {
      await runSteps(
        names.map((name, i) => ({
          title: name,
          run: async (retitle) => {
            setTitle = retitle
            const f = await files[i].promise
            retitle(`${f.skipped ? 'kept' : 'fetched'} ${f.file} (${formatBytes(f.size)}${f.skipped ? ', already in place and verified' : ''})`)
          },
        })),
      )
    } finally {
      // Below the list, once it is drawn for the last time.
      if (stoppedAfter) this.sayStopped(stoppedAfter)
    }
    await pulled
    for (const f of unpinned) this.logToStderr(firstUseWarning(f))
    // A file copied into the folder by hand is verified like a download: say that nothing had to be fetched.
    const already = keptFiles.length === 1 ? `${keptFiles[0]} was already there and matches its` : 'its files were already there and match their'
    const kept = keptFiles.length === count ? ` (${already} pinned sha256; nothing was downloaded)` : ''
    this.printResult(textReporter(), `${preset} is installed in ${visible(dir)}${kept}\n`)
  }
}
