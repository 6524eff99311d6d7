/**
 * The code-fence strip (spec 02, issue 8 item 1): linear at any size, with exactly the semantics of the former pattern.
 * The pathological cases took seconds to minutes with the pattern; the per-test timeout is a guard, the assertions are
 * on the results.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { resolveInstance } from '../../src/core/instance.js';
import { prepareRequest } from '../../src/core/request.js';
import { stripCodeFence, validateCandidate } from '../../src/core/validate.js';

/** The former definition, quadratic on a long body without a close; used here on short strings only. */
const FORMER = /^\s*```[A-Za-z0-9_+-]*[ \t]*\r?\n([\s\S]*?)\r?\n?[ \t]*```\s*$/;
const former = (text: string): string => {
  const m = FORMER.exec(text);
  return m === null ? text : (m[1] ?? '');
};

const MIB = 1024 * 1024;
const GUARD = { timeout: 10_000 };

describe('stripCodeFence: the same answers as the former pattern', () => {
  const pieces = ['`', '```', ' ', '\t', '\r', '\n', '\r\n', 'json', 'a', '{}', '-', '+', '\u00a0', '\u2028', '\ufeff'];
  it('agrees on random fence-shaped text (fixed seed)', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...pieces), { maxLength: 24 }), (parts) => {
        const text = parts.join('');
        expect(stripCodeFence(text)).toBe(former(text));
      }),
      { numRuns: 20_000 },
    );
  });

  it('agrees on random text around a fence (fixed seed)', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 6 }),
        fc.constantFrom('', 'json', 'c++', 'x y', '`'),
        fc.string({ maxLength: 12 }),
        fc.constantFrom('\n', '\r\n', '', ' \t\n', '\r'),
        fc.string({ unit: fc.constantFrom(' ', '\n', '\t', 'x', '`'), maxLength: 6 }),
        (before, info, body, close, after) => {
          const text = `${before}\`\`\`${info}\n${body}${close}\`\`\`${after}`;
          expect(stripCodeFence(text)).toBe(former(text));
        },
      ),
      { numRuns: 5_000 },
    );
  });

  it.each([
    ['a bare fence', '```\n{"a":1}\n```', '{"a":1}'],
    ['an info string and CRLF', '  ```json \r\n{"a":1}\r\n```  \n', '{"a":1}'],
    ['an empty body', '```\n```', ''],
    ['a blank line as body', '```\n\n```', ''],
    ['an indented close', '```\n{}\n   \t```', '{}'],
    ['a close after a carriage return alone', '```\n{}\r```', '{}'],
    ['a close on the body line', '```\n{} ```', '{}'],
    ['fence only', '```', '```'],
    ['an unclosed fence', '```json\n{}', '```json\n{}'],
    ['four backticks', '````\n{}\n````', '````\n{}\n````'],
    ['text after the close', '```\n{}\n```x', '```\n{}\n```x'],
  ])('%s', (_what, text, expected) => {
    expect(stripCodeFence(text)).toBe(expected);
    expect(former(text)).toBe(expected);
  });
});

describe('stripCodeFence: linear on 1 MiB of hostile text [H08-FENCE-LINEAR]', () => {
  const spaces = ' '.repeat(MIB);

  it('an opened fence followed by 1 MiB of spaces and no close stays as is', GUARD, () => {
    const text = '```\n' + spaces + 'x';
    expect(stripCodeFence(text)).toBe(text);
  });

  it('the same with a close strips to the body', GUARD, () => {
    expect(stripCodeFence('```\n' + spaces + 'x\n```')).toBe(spaces + 'x');
    expect(stripCodeFence('```\n' + spaces + '```')).toBe('');
  });

  it('spaces and tabs, newlines, CRLF, backticks', GUARD, () => {
    const blanks = ' \t'.repeat(MIB / 2);
    expect(stripCodeFence('```json\n' + blanks + 'x``')).toBe('```json\n' + blanks + 'x``');
    expect(stripCodeFence('```\n' + '\n'.repeat(MIB) + '```')).toBe('\n'.repeat(MIB - 1));
    expect(stripCodeFence('```\r\n' + '\r\n'.repeat(MIB / 2) + '```')).toBe('\r\n'.repeat(MIB / 2 - 1));
    expect(stripCodeFence('```\n' + '\r\n \t'.repeat(MIB / 4) + 'x')).toBe('```\n' + '\r\n \t'.repeat(MIB / 4) + 'x');
    const ticks = '`'.repeat(MIB);
    expect(stripCodeFence(ticks)).toBe(ticks);
    expect(stripCodeFence('```\n' + ticks)).toBe('`'.repeat(MIB - 3));
    expect(stripCodeFence(spaces + '```' + spaces)).toBe(spaces + '```' + spaces);
    expect(stripCodeFence('```\n' + '``\n'.repeat(MIB / 3))).toBe('```\n' + '``\n'.repeat(MIB / 3));
  });

  it('validateCandidate answers such a candidate with a JSON problem', GUARD, () => {
    const prepared = prepareRequest(resolveInstance({}), { input: 'book a flight' }, new Date(0));
    const check = validateCandidate(prepared, '```\n' + spaces + 'x');
    expect(check).toEqual({ ok: false, issues: [{ path: '', message: expect.stringContaining('JSON') as unknown }] });
  });
});
