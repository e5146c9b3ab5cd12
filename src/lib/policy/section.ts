/**
 * A signal's own section of the policy file (`hash_lists:` for pdq, `text:` for text), implemented in the
 * signal's folder (`signals/<name>/policy-section.ts`) and named on its Signal. The policy module reads, checks,
 * loads, builds, summarises and shows every section through this interface and knows none of them: the
 * sections are passed in (PolicyPlugins), derived from the signal registry above this module.
 */
import type {PolicyProblem, YamlContext} from './yaml-reader.js'

/** The categories of the file after its changes, for a section's checks. */
export interface CategoryNames {
  /** Every category name: the built-ins', then the file's in file order (disabled ones included). */
  readonly names: readonly string[]
  /** The ones the file switches off. */
  readonly disabled: ReadonlySet<string>
}

/** What a section read from its node. */
export interface SectionRead<F> {
  /** Kept in the policy file under the section's key; absent: the section holds nothing (an empty `text:`). */
  value?: F
  /**
   * Checks that need the whole file (a rule's category must exist and be on), run once every key is read;
   * problems go to the same context.
   */
  check?(categories: CategoryNames): void
}

/** A category the section's signal feeds, and how much the signal counts in it. */
export interface SectionFeed {
  category: string
  weight: number
}

/** A section's part of the active policy. */
export interface SectionBuild<B> {
  /** Kept in `policy.sections` under the section's key, for its signal to read; absent: nothing to keep. */
  value?: B
  /** The categories its signal feeds (a category it alone creates, `ownCategories`, is added when missing). */
  feeds: readonly SectionFeed[]
}

/** One line of `mod policy validate`'s summary: `  label: text`. */
export interface SummaryLine {
  label: string
  text: string
}

/** A problem in a file the section names (or, with that file unreadable, on the policy's line), as `file:line: message`. */
export interface FileProblem {
  file: string
  line: number
  message: string
}

/** What `mod policy validate` found reading the files a section names through, beyond what loading reads. */
export interface SectionCheck {
  problems: FileProblem[]
  /** Summary lines, printed when everything is valid. */
  lines: SummaryLine[]
  /** Added to the `--json` output under the section's key; absent: nothing to add. */
  output?: unknown
}

/**
 * F: the section as read from the file (what `validatePolicyText` gives under its key); B: its part of the active
 * policy; D: the files it reads when the policy is loaded (word lists), by readFiles.
 */
export interface PolicySection<F = unknown, B = unknown, D = unknown> {
  /** Its top-level key in the policy file. */
  readonly key: string
  /** What it does to a scan, one line of `mod scan --help` that links the docs saying more. */
  readonly help?: string
  /** Categories that exist only while this section feeds them (`known_bad`, `contact_info`): no prompts, threshold 0.5. */
  readonly ownCategories?: readonly string[]
  /** Reads and validates its node (`at`: where its key is), reporting problems through the context's helpers (yaml-reader.ts). */
  read(ctx: YamlContext, node: unknown, at: number): SectionRead<F>
  /**
   * Reads the files it names, relative to `dir` (the policy file's folder), when the policy is validated or
   * loaded; a file it cannot use is a problem on the line that names it. Also called with a section read from a
   * file with other problems, so that one round reports them all.
   */
  readFiles?(value: F, dir: string): Promise<{files: D; problems: PolicyProblem[]}>
  /** Its part of the active policy, paths resolved against `dir`; `value` absent when the file has no such section. */
  build(value: F | undefined, dir: string, files: D | undefined): SectionBuild<B>
  /** Its fields in `mod policy validate`'s summary (JSON) and its summary lines; `value` absent when the file has none. */
  summary?(value: F | undefined): {fields: Record<string, unknown>; lines: SummaryLine[]}
  /** For `mod policy validate`: checks the files it names through (`policyPath` as the user wrote it, for messages). */
  verify?(value: F, policyPath: string): Promise<SectionCheck>
  /** Its part of `mod policy show`, a value that reads back as this section; undefined: left out. */
  show?(value: B): unknown
}

/** What the policy module is given about the signals: their sections, and the signals the policy switches. */
export interface PolicyPlugins {
  /** Each section with the name of its signal (the key of its weight in a category), in the order they are read and shown. */
  readonly sections: readonly {readonly signal: string; readonly section: PolicySection}[]
  /** The signals `specialists:` switches, each with its state when the policy says nothing. */
  readonly switches: ReadonlyMap<string, boolean>
}
