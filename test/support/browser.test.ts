// The browser harness: how it finds Chromium (and when it may skip), where screenshots go, and, on the real Debian
// Chromium, that withBrowser gives each caller a fresh context, saves a page on failure and closes what it opened.
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { artifactsDir, chromiumSkipReason, ensureChromium, findChromium, launchChromium, screenshot, screenshotPath, withBrowser } from './browser.js';
import { tempDirsPerTest } from './temp-dirs.js';

const tempDir = tempDirsPerTest('svc-browser-test-');

function fakeBinary(dir: string, name: string): string {
  const path = join(dir, name);
  writeFileSync(path, '#!/bin/sh\n');
  chmodSync(path, 0o755);
  return path;
}

describe('finding Chromium', () => {
  it('takes SVC_CHROMIUM as asked, refuses it when it is no executable file, and else looks in the usual places and on PATH', () => {
    const dir = tempDir();
    const own = fakeBinary(dir, 'my-chromium');
    expect(findChromium({ SVC_CHROMIUM: own }, [])).toBe(own);
    expect(() => findChromium({ SVC_CHROMIUM: dir }, [])).toThrow(`SVC_CHROMIUM=${dir} is not an executable file`);
    mkdirSync(join(dir, 'bin'));
    expect(findChromium({ PATH: join(dir, 'bin') }, [])).toBeUndefined();
    const onPath = fakeBinary(join(dir, 'bin'), 'chromium');
    expect(findChromium({ PATH: join(dir, 'bin') }, [])).toBe(onPath);
    expect(findChromium({ PATH: join(dir, 'bin') }, [own])).toBe(own);
  });

  it('may be skipped only outside CI, when it is missing and SVC_SKIP_BROWSER=1 asks', () => {
    const empty = { PATH: tempDir() };
    expect(chromiumSkipReason({ ...empty, SVC_SKIP_BROWSER: '1' }, [])).toContain('chromium is not installed and SVC_SKIP_BROWSER=1 (install: apt-get update && apt-get install -y chromium fonts-liberation)');
    expect(chromiumSkipReason({ ...empty, SVC_SKIP_BROWSER: '1', CI: 'true' }, [])).toBeUndefined();
    expect(chromiumSkipReason(empty, [])).toBeUndefined();
  });
});

describe('screenshots', () => {
  it('go to SVC_ARTIFACTS_DIR or the git-ignored .cache/artifacts, under names that stay inside it', () => {
    expect(artifactsDir({})).toMatch(/\/\.cache\/artifacts$/);
    expect(readFileSync(join(artifactsDir({}), '..', '..', '.gitignore'), 'utf8').split('\n')).toContain('.cache/');
    expect(screenshotPath('keycloak-login', { SVC_ARTIFACTS_DIR: '/tmp/shots' })).toBe('/tmp/shots/keycloak-login.png');
    for (const bad of ['', '../x', 'a/b', '.hidden', 'a..b', 'sign in']) expect(() => screenshotPath(bad, {})).toThrow('screenshot name');
  });
});

const skip = chromiumSkipReason();
(skip === undefined ? describe : describe.skip)('withBrowser on Debian Chromium', () => {
  let browser: Browser;
  let server: Server;
  let origin = '';
  const savedArtifacts = process.env.SVC_ARTIFACTS_DIR;
  let artifacts = '';

  beforeAll(async () => {
    ensureChromium(); // installs it (apt) on a fresh machine
    artifacts = mkdtempSync(join(tmpdir(), 'svc-browser-artifacts-'));
    process.env.SVC_ARTIFACTS_DIR = artifacts;
    // One page that sets a cookie and shows whether the browser sent one back.
    server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', 'set-cookie': 'seen=1; HttpOnly; SameSite=Lax; Path=/' });
      res.end(`<!doctype html><title>probe</title><p id="cookie">${req.headers.cookie ?? 'no cookie'}</p><button onclick="document.title='clicked'">Press</button>`);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
  }, 900_000);

  afterAll(async () => {
    await browser?.close();
    rmSync(artifacts, { recursive: true, force: true });
    if (server) await new Promise((r) => server.close(r));
    if (savedArtifacts === undefined) delete process.env.SVC_ARTIFACTS_DIR;
    else process.env.SVC_ARTIFACTS_DIR = savedArtifacts;
  });

  it('drives a page (navigation, a click) and saves a PNG of it', async () => {
    const saved = await withBrowser(async (page) => {
      await page.goto(`${origin}/`);
      await page.getByRole('button', { name: 'Press' }).click();
      await expect(page.title()).resolves.toBe('clicked');
      return screenshot(page, 'probe');
    }, { browser });
    expect(saved).toBe(join(artifacts, 'probe.png'));
    expect(readFileSync(saved).subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
  }, 120_000);

  it('gives each caller a fresh context: a cookie set in one is not sent from the next', async () => {
    const seen = async () => withBrowser(async (page) => {
      await page.goto(`${origin}/`);
      await page.reload();
      return page.locator('#cookie').textContent();
    }, { browser });
    expect(await seen()).toBe('seen=1');
    expect(await withBrowser(async (page) => (await page.goto(`${origin}/`), page.locator('#cookie').textContent()), { browser })).toBe('no cookie');
  }, 120_000);

  it('saves the page when the caller fails, and says where, keeping the caller\'s error', async () => {
    const failing = withBrowser(async (page) => {
      await page.goto(`${origin}/`);
      throw new Error('the assertion that failed');
    }, { browser, failureScreenshot: 'probe' });
    await expect(failing).rejects.toThrow(`the assertion that failed\n(the page then: ${join(artifacts, 'probe-failure.png')}, at ${origin}/)`);
  }, 120_000);

  it('launches and closes a browser of its own when given none', async () => {
    const title = await withBrowser(async (page) => {
      await page.goto(`${origin}/`);
      return page.title();
    });
    expect(title).toBe('probe');
  }, 120_000);
});
