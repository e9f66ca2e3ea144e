// A real browser for the suites: Debian's Chromium (package `chromium`, installed with apt when missing and we are
// root), driven headless through playwright-core, which never downloads a browser of its own. Each launch starts
// from a fresh, empty profile (Playwright's temporary user-data-dir, removed at close), and withBrowser gives each
// caller a new context (its own cookies), closed afterwards. Screenshots go to the artifacts directory
// (`.cache/artifacts/`, git-ignored, or SVC_ARTIFACTS_DIR), where docs/testing.md says they go.
//
// Under CI=true a missing Chromium that cannot be installed is a failure; elsewhere SVC_SKIP_BROWSER=1 turns it into
// a skip, decided by chromiumSkipReason before any test runs.
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { aptInstall, aptInstallCommand } from './apt.js';
import { isExecutable } from './cache.js';

/** Debian's browser, and a font family for pages that ask for Arial/Helvetica (screenshots stay legible). */
export const CHROMIUM_PACKAGES = ['chromium', 'fonts-liberation'] as const;

/**
 * Headless on a machine without a display, GPU or outside network: no sandbox (the suites run as root), and none
 * of Chromium's own background connections, which a closed network refuses many at a time.
 */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
] as const;

const CANDIDATES = ['/usr/bin/chromium', '/usr/lib/chromium/chromium'];

/** SVC_CHROMIUM when set (it must be executable), else Debian's chromium, else one on PATH. */
export function findChromium(env: NodeJS.ProcessEnv = process.env, candidates: readonly string[] = CANDIDATES): string | undefined {
  if (env.SVC_CHROMIUM) {
    if (!isExecutable(env.SVC_CHROMIUM)) throw new Error(`SVC_CHROMIUM=${env.SVC_CHROMIUM} is not an executable file`);
    return env.SVC_CHROMIUM;
  }
  const dirs = (env.PATH ?? '').split(':').filter((d) => d.length > 0);
  return [...candidates, ...dirs.map((d) => join(d, 'chromium'))].find(isExecutable);
}

/** Why the browser suites skip: only outside CI, with Chromium missing and SVC_SKIP_BROWSER=1 asking for it. */
export function chromiumSkipReason(env: NodeJS.ProcessEnv = process.env, candidates: readonly string[] = CANDIDATES): string | undefined {
  if (env.CI === 'true' || env.SVC_SKIP_BROWSER !== '1') return undefined;
  return findChromium(env, candidates) ? undefined : `chromium is not installed and SVC_SKIP_BROWSER=1 (install: ${aptInstallCommand(CHROMIUM_PACKAGES)})`;
}

/** The Chromium binary, installed from Debian's packages first when missing (root); throws with the command otherwise. */
export function ensureChromium(): string {
  const found = findChromium();
  if (found) return found;
  aptInstall(CHROMIUM_PACKAGES);
  const installed = findChromium();
  if (!installed) throw new Error(`${CHROMIUM_PACKAGES.join(', ')} installed but no chromium binary found; install by hand: ${aptInstallCommand(CHROMIUM_PACKAGES)}`);
  return installed;
}

/** What `chromium --version` says ("Chromium 156.0.8078.108 built on Debian ..."). */
export function chromiumVersion(binary: string): string {
  const r = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`${binary} --version failed (exit ${r.status ?? r.signal}): ${r.stderr}`);
  return r.stdout.trim();
}

/**
 * Chromium started headless (ensureChromium first). Close it with `browser.close()`, which ends its whole process
 * group and removes its profile; Playwright also kills it if this process exits first.
 */
export async function launchChromium(): Promise<Browser> {
  const executablePath = ensureChromium();
  return chromium.launch({ executablePath, headless: true, args: [...CHROMIUM_ARGS], timeout: 120_000 });
}

export interface WithBrowserOptions {
  /** A browser to open the context in (kept open); by default one is launched for this call and closed after. */
  readonly browser?: Browser;
  /** For the new context (viewport, locale, ...). */
  readonly context?: BrowserContextOptions;
  /** When `fn` fails, the page is saved as screenshot `<failureScreenshot>-failure` and the error names the file. */
  readonly failureScreenshot?: string;
}

/** Runs `fn` with a page in a fresh context (no cookies, no storage), closing the context (and an own browser) after. */
export async function withBrowser<T>(fn: (page: Page, context: BrowserContext) => Promise<T>, options: WithBrowserOptions = {}): Promise<T> {
  const own = options.browser ? undefined : await launchChromium();
  try {
    const context = await (options.browser ?? own!).newContext({ viewport: { width: 1024, height: 768 }, ...options.context });
    try {
      const page = await context.newPage();
      try {
        return await fn(page, context);
      } catch (e) {
        if (options.failureScreenshot === undefined || page.isClosed()) throw e;
        const saved = await screenshot(page, `${options.failureScreenshot}-failure`).catch((s: Error) => `none (${s.message})`);
        throw new Error(`${(e as Error).message}\n(the page then: ${saved}, at ${page.url()})`, { cause: e });
      }
    } finally {
      await context.close();
    }
  } finally {
    await own?.close();
  }
}

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Where screenshots go: SVC_ARTIFACTS_DIR, else `<repo>/.cache/artifacts`. */
export function artifactsDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.SVC_ARTIFACTS_DIR ? resolve(env.SVC_ARTIFACTS_DIR) : join(repoRoot, '.cache', 'artifacts');
}

/** The file a screenshot named `name` (letters, digits, `.`, `_`, `-`) is saved as. */
export function screenshotPath(name: string, env: NodeJS.ProcessEnv = process.env): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name) || name.includes('..')) throw new Error(`screenshot name ${JSON.stringify(name)}: use letters, digits, '.', '_' and '-'`);
  return join(artifactsDir(env), `${name}.png`);
}

/** Saves the whole page as `<artifacts>/<name>.png` (replacing an older one) and returns the path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  const path = screenshotPath(name);
  mkdirSync(dirname(path), { recursive: true });
  await page.screenshot({ path, fullPage: true });
  return path;
}
