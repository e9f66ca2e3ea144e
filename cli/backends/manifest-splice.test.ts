import { describe, expect, it } from '@jest/globals';
import { parseManifests } from '../../core/index.js';
import { renderFile, type ManifestText } from './manifest-splice.js';

/** A file as the store reads it: its text and the whole-file parse. */
function file(text: string, path = '/d/f.yaml'): ManifestText {
  const parsed = parseManifests(text);
  if (!parsed.ok) throw new Error(parsed.error);
  return { path, json: path.endsWith('.json'), text, docs: parsed.value.map((value) => ({ value })) };
}

const TWO = `# kept: the file's own comment
a: 1   # and this one
---
# the second document
b: 2
---
c: 3
`;

describe('renderFile', () => {
  it('rewrites only the edited document: the others, their comments and the comments that lead it keep their bytes', () => {
    const out = renderFile(file(TWO), new Map([[1, { b: 20 }]]));
    expect(out).toBe(`# kept: the file's own comment
a: 1   # and this one
---
# the second document
b: 20
---
c: 3
`);
  });

  it('no edit gives the text back as it was, a last line without newline included', () => {
    const text = 'a: 1\n---\nb: 2';
    expect(renderFile(file(text), new Map())).toBe(text);
    expect(renderFile(file(text), new Map([[0, { a: 10 }]]))).toBe('a: 10\n---\nb: 2');
  });

  it('a layout the split cannot reproduce (a directive, a "..." end marker) is dumped whole', () => {
    const text = '%YAML 1.2\n---\na: 1\n...\n---\nb: 2\n';
    expect(renderFile(file(text), new Map([[1, { b: 20 }]]))).toBe('a: 1\n---\nb: 20\n');
  });

  it('a JSON manifest is written as JSON; one with several objects is refused', () => {
    expect(renderFile(file('{"a": 1}', '/d/f.json'), new Map([[0, { a: 2 }]]))).toBe('{\n  "a": 2\n}\n');
    const several: ManifestText = { path: '/d/f.json', json: true, text: '', docs: [{ value: 1 }, { value: 2 }] };
    expect(() => renderFile(several, new Map())).toThrow('/d/f.json: a JSON manifest must hold one object');
  });
});
