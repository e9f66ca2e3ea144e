// The documentation's examples agree with what they describe: every `svc` / `kubectl svc` command in a fenced block
// of README.md, docs/ and deploy/README.md parses with the CLI's own commander tree (nothing runs), every ingress
// annotation they name is set, with that value, by the manifests in deploy/, and every chart value a `--set` names
// exists. Found by reading the text, never from a list kept by hand. NOTES.txt, a template, is checked as helm
// renders it (test/integration/docs-notes.test.ts).
import { describe, expect, it } from '@jest/globals';
import { load } from 'js-yaml';
import { annotationMentions, annotationMismatch, deployAnnotations, manifestSettings, markdownExamples, refusal, settingMismatches, svcCommands, type Example } from './examples.js';
import { read, trackedFiles } from './markdown.js';

const files = trackedFiles();
const DOCS = files.filter((f) => f === 'README.md' || f === 'deploy/README.md' || (f.startsWith('docs/') && f.endsWith('.md')));
const DEPLOY_MANIFESTS = files.filter((f) => f.startsWith('deploy/') && /\.ya?ml$/.test(f));

describe('svc commands in the documentation', () => {
  const examples: Example[] = DOCS.flatMap(markdownExamples);

  it('are found in README, docs/ and deploy/README.md', () => {
    expect(examples.length).toBeGreaterThan(15);
    expect(examples.some((e) => e.where.startsWith('README.md'))).toBe(true);
    expect(examples.some((e) => e.where.startsWith('docs/'))).toBe(true);
  });

  it('each parses with the CLI (commander, the scope flags); none is refused', async () => {
    const refused: string[] = [];
    for (const e of examples) {
      const why = await refusal(e.words);
      if (why !== undefined) refused.push(`${e.where}: svc ${e.words.join(' ')}: ${why}`);
    }
    expect(refused).toEqual([]);
  });
});

describe('ingress annotations in the documentation', () => {
  const manifests = deployAnnotations(DEPLOY_MANIFESTS);

  it('each is set by a manifest in deploy/, with the value the text gives', () => {
    const mentions = DOCS.flatMap((f) => annotationMentions(read(f), f, true));
    expect(mentions.length).toBeGreaterThan(5);
    expect(mentions.map((m) => annotationMismatch(m, manifests)).filter((x) => x !== undefined)).toEqual([]);
  });

  it('the comments of the manifests name them as they are set', () => {
    const mentions = DEPLOY_MANIFESTS.flatMap((f) => annotationMentions(read(f).split('\n').map((l) => (/^\s*#/.test(l) ? l : '')).join('\n'), f, false));
    expect(mentions.map((m) => annotationMismatch(m, manifests)).filter((x) => x !== undefined)).toEqual([]);
  });
});

describe('proxy settings quoted in the documentation', () => {
  // The proxies' own configurations (deploy/wis2box holds ProtectedScopes, not proxy settings).
  const PROXY_MANIFESTS = DEPLOY_MANIFESTS.filter((f) => /^deploy\/(ingress-nginx|traefik|gateway-api)\//.test(f));
  const settings = manifestSettings(PROXY_MANIFESTS);

  it('each `key: value` that names a manifest key has a value the manifests hold (README.md, deploy/README.md, docs/)', () => {
    expect(settings.has('trustForwardHeader')).toBe(true);
    expect(DOCS).toEqual(expect.arrayContaining(['README.md', 'deploy/README.md', 'docs/deploying.md', 'docs/svc-auth.md']));
    // docs/access-rules.md quotes the settings its attack cases refute (trustForwardHeader: true): not advice.
    const advising = DOCS.filter((f) => f !== 'docs/access-rules.md');
    expect(advising.flatMap((f) => settingMismatches(read(f), f, settings))).toEqual([]);
  });
});

describe('chart values named by --set in the documentation and the manifests', () => {
  const values = load(read('charts/svc/values.yaml')) as Record<string, unknown>;
  const exists = (path: string) => path.split('.').reduce<unknown>((node, key) => (node && typeof node === 'object' && key in node ? (node as Record<string, unknown>)[key] : undefined), values) !== undefined;

  it('each exists in charts/svc/values.yaml', () => {
    const sources = [...DOCS, ...DEPLOY_MANIFESTS, 'charts/svc/templates/NOTES.txt'];
    const named = sources.flatMap((f) => read(f).split('\n').flatMap((l, i) => [...l.matchAll(/--set(?:-json|-string)?[ =]'?([A-Za-z][A-Za-z0-9.]*)=/g)].map((m) => ({ where: `${f}:${i + 1}`, key: m[1]! }))));
    expect(named.length).toBeGreaterThan(3);
    expect(named.filter((n) => !exists(n.key)).map((n) => `${n.where}: ${n.key}`)).toEqual([]);
  });
});

describe('the example readers themselves', () => {
  it('find svc commands in their shell forms, and not the word svc elsewhere', () => {
    expect(svcCommands('kubectl -n svc exec deploy/svc-management -- svc auth show')).toEqual([['auth', 'show']]);
    expect(svcCommands('kubectl -n svc get protectedscopes')).toEqual([]);
    expect(svcCommands('npx svc --dir .svc/scopes auth add-token --path processes/svc   # prints a token')).toEqual([['--dir', '.svc/scopes', 'auth', 'add-token', '--path', 'processes/svc']]);
    expect(svcCommands('printf %s "$TOKEN" | svc auth has-access-topic --path processes/svc -')).toEqual([['auth', 'has-access-topic', '--path', 'processes/svc', '-']]);
    expect(svcCommands('kubectl svc -n svc auth show > out.txt')).toEqual([['-n', 'svc', 'auth', 'show']]);
    expect(svcCommands('svc auth show --metadata-id x -o wcmp2 > security.json && svc auth close --path y')).toEqual([
      ['auth', 'show', '--metadata-id', 'x', '-o', 'wcmp2'],
      ['auth', 'close', '--path', 'y'],
    ]);
  });

  it('refuse what svc refuses: an unknown flag, a bad choice, two scopes, no scope, an unknown command', async () => {
    expect(await refusal(['auth', 'show', '--bogus'])).toMatch(/unknown option/);
    expect(await refusal(['auth', 'show', '-o', 'xml'])).toMatch(/Allowed choices/);
    expect(await refusal(['auth', 'add-token', '--path', 'processes/svc', '--topic-hierarchy', 'a'])).toMatch(/exactly one scope/);
    expect(await refusal(['auth', 'remove-tokens'])).toMatch(/a scope is needed/);
    expect(await refusal(['auth', 'public', '--topic-hierarchy', 'a.b'])).toBeDefined();
    expect(await refusal(['auth', 'nope'])).toMatch(/unknown command/);
    expect(await refusal(['auth', 'add-token', '--path', 'processes/svc'])).toBeUndefined();
  });

  it('read annotations with and without their prefix, and compare their values', () => {
    const m = annotationMentions('- `auth-keepalive: "32"` and `nginx.ingress.kubernetes.io/auth-url` and `auth-method: GET`', 'x.md', true);
    expect(m).toEqual([
      { where: 'x.md:1', key: 'nginx.ingress.kubernetes.io/auth-keepalive', value: '32' },
      { where: 'x.md:1', key: 'nginx.ingress.kubernetes.io/auth-url' },
      { where: 'x.md:1', key: 'nginx.ingress.kubernetes.io/auth-method', value: 'GET' },
    ]);
    const manifests = new Map([['nginx.ingress.kubernetes.io/auth-keepalive', new Set(['64'])]]);
    expect(annotationMismatch(m[0]!, manifests)).toMatch(/deploy\/ sets "64"/);
    expect(annotationMismatch(m[1]!, manifests)).toMatch(/set by no manifest/);
  });
});
