/** Substring search over caller text (evidence and values looked up in `input` and `context`). */

/**
 * `haystack.includes(needle)` in time linear in both (Knuth–Morris–Pratt, one failure table per needle, built once and
 * reused for every haystack). Both strings are caller text, and `includes` is O(|haystack|·|needle|) at worst.
 */
export function substringSearch(needle: string): (haystack: string) => boolean {
  const m = needle.length;
  const fail = new Int32Array(m);
  for (let i = 1, k = 0; i < m; i++) {
    while (k > 0 && needle.charCodeAt(i) !== needle.charCodeAt(k)) k = fail[k - 1] ?? 0;
    if (needle.charCodeAt(i) === needle.charCodeAt(k)) k++;
    fail[i] = k;
  }
  return (haystack) => {
    if (m === 0) return true;
    if (haystack.length < m) return false;
    for (let i = 0, k = 0; i < haystack.length; i++) {
      const c = haystack.charCodeAt(i);
      while (k > 0 && c !== needle.charCodeAt(k)) k = fail[k - 1] ?? 0;
      if (c === needle.charCodeAt(k) && ++k === m) return true;
    }
    return false;
  };
}
