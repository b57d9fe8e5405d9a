/**
 * Bytes to text, strictly: a file that is not UTF-8 is reported at its first bad byte instead of
 * being read with U+FFFD in place of what was there (TextDecoder's default), and characters YAML
 * does not allow (control bytes, lone surrogates) are found with their offset.
 */
import { isUtf8 } from 'node:buffer';

export interface DecodedText {
  /** The text; when the bytes are not UTF-8, decoded with U+FFFD for bad bytes (for code frames only). */
  text: string;
  /** When the bytes are not UTF-8: the offset in `text` of the first bad byte, and that byte. */
  invalid?: { offset: number; byte: number };
}

export function decodeUtf8(bytes: Uint8Array): DecodedText {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (isUtf8(buf)) return { text: buf.toString('utf8') };
  const bad = firstInvalidUtf8(buf);
  return { text: buf.toString('utf8'), invalid: { offset: buf.subarray(0, bad).toString('utf8').length, byte: buf[bad] ?? 0 } };
}

/** Index of the first byte that does not belong to a well-formed UTF-8 sequence (-1 when none). */
export function firstInvalidUtf8(b: Uint8Array): number {
  let i = 0;
  const n = b.length;
  while (i < n) {
    const c = b[i]!;
    if (c < 0x80) {
      i++;
      continue;
    }
    const need = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : 0;
    if (need === 0) return i;
    const min = need === 1 ? 0x80 : need === 2 ? 0x800 : 0x10000;
    let cp = c & (0x3f >> need);
    for (let k = 1; k <= need; k++) {
      const d = b[i + k];
      if (d === undefined || (d & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += need + 1;
  }
  return -1;
}

/** Characters YAML 1.2 does not allow in a stream (js-yaml's rule): C0/C1 controls but tab, LF, CR and NEL; U+FFFE/U+FFFF; lone surrogates. */
const NOT_ALLOWED = /[\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x84\x86-\x9F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The first character YAML does not allow, with its offset. */
export function findInvalidCharacter(text: string): { offset: number; code: number } | undefined {
  const m = NOT_ALLOWED.exec(text);
  if (!m) return undefined;
  return { offset: m.index, code: m[0].charCodeAt(0) };
}

/** `U+0007`, `U+001B`. */
export function codePointName(code: number): string {
  return `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
}
