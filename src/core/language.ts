import type { Language, LanguageOption } from './schemas.js';

/** Han ideographs (with extension A and compatibility), kana and hangul: "CJK characters" of spec 02. */
const CJK = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]/u;

/**
 * The language of generated descriptions and messages (spec 02): the request's `output.language`, else the instance's,
 * else `auto`, which is `zh-CN` when the input contains CJK characters and `en` otherwise. A request that says `auto`
 * explicitly asks for detection even when the instance names a language.
 */
export function chooseLanguage(
  input: string,
  requested: LanguageOption | undefined,
  instance: LanguageOption | undefined,
): Language {
  // An explicit request-level choice wins, `auto` included (detect from this input); otherwise the instance's.
  const choice = requested ?? instance ?? 'auto';
  if (choice !== 'auto') return choice;
  return CJK.test(input) ? 'zh-CN' : 'en';
}

/** NFC, trimmed, whitespace runs folded to one space. Not NFKC: full-width punctuation stays as written. */
export function normalizeText(text: string): string {
  // Only real runs (two or more, or one that is not a plain space) are replaced: a string without any stays the flat
  // string it is, where an unconditional replace would hand back a V8 rope several times its size (BENCHMARKS.md).
  return text
    .normalize('NFC')
    .trim()
    .replace(/\s{2,}|[^\S ]/gu, ' ');
}

/** The localised strings the result carries. */
export interface ResultMessages {
  added: string;
  updated: string;
  removed: string;
  changeIgnoredTargetGone: (id: string) => string;
  changeIgnoredNothingToSet: (id: string) => string;
  changeIgnoredWrongKeys: (id: string, keys: string) => string;
  fieldInvalid: (field: string, why: string) => string;
  requiredMissing: (field: string) => string;
  defaultBasis: string;
  timeBasis: (referenceTime: string) => string;
  why: {
    pattern: string;
    enum: (options: string) => string;
    minimum: (n: number) => string;
    maximum: (n: number) => string;
    date: string;
    datetime: string;
  };
}

const zh: ResultMessages = {
  added: '新增本轮明确请求',
  updated: '按本轮请求更新',
  removed: '按本轮请求移除',
  changeIgnoredTargetGone: (id) => `对 ${id} 的变更未执行：该项已在本轮被移除。`,
  changeIgnoredNothingToSet: (id) => `对 ${id} 的更新未执行：没有给出任何新值。`,
  changeIgnoredWrongKeys: (id, keys) => `对 ${id} 的更新未执行：${keys} 不适用于该类条目。`,
  fieldInvalid: (field, why) => `字段 ${field} 的值不符合要求：${why}。`,
  requiredMissing: (field) => `缺少必填字段 ${field}，请向用户询问。`,
  defaultBasis: '字段默认值',
  timeBasis: (t) => `根据参考时间 ${t} 推算`,
  why: {
    pattern: '格式不符合规定的模式',
    enum: (o) => `应为以下之一：${o}`,
    minimum: (n) => `不应小于 ${n}`,
    maximum: (n) => `不应大于 ${n}`,
    date: '应为 YYYY-MM-DD 格式的有效日期',
    datetime: '应为带时区偏移的 ISO 8601 日期时间',
  },
};

const en: ResultMessages = {
  added: "Added from this turn's explicit request",
  updated: "Updated by this turn's request",
  removed: "Removed by this turn's request",
  changeIgnoredTargetGone: (id) => `The change to ${id} was not applied: that item was already removed in this turn.`,
  changeIgnoredNothingToSet: (id) => `The update of ${id} was not applied: it gives no new value.`,
  changeIgnoredWrongKeys: (id, keys) =>
    `The update of ${id} was not applied: ${keys} do not apply to that kind of item.`,
  fieldInvalid: (field, why) => `The value of field ${field} is not acceptable: ${why}.`,
  requiredMissing: (field) => `The required field ${field} is missing; ask the user for it.`,
  defaultBasis: 'schema default',
  timeBasis: (t) => `resolved against the reference time ${t}`,
  why: {
    pattern: 'it does not match the required pattern',
    enum: (o) => `it must be one of: ${o}`,
    minimum: (n) => `it must not be less than ${n}`,
    maximum: (n) => `it must not be greater than ${n}`,
    date: 'it must be a valid date in YYYY-MM-DD form',
    datetime: 'it must be an ISO 8601 date-time with an offset',
  },
};

export function resultMessages(language: Language): ResultMessages {
  return language === 'zh-CN' ? zh : en;
}
