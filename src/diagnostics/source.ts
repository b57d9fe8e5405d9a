/** A source text with a lazily built line index: offsets are stored, line:col computed on demand. */
export class SourceFile {
  private starts: number[] | undefined;
  constructor(
    readonly name: string,
    readonly text: string,
  ) {}

  private lineStarts(): number[] {
    if (!this.starts) {
      const starts = [0];
      const t = this.text;
      for (let i = 0; i < t.length; i++) if (t.charCodeAt(i) === 10) starts.push(i + 1);
      this.starts = starts;
    }
    return this.starts;
  }

  /** 1-based line and column of an offset. Columns count UTF-16 code units, as editors do for BMP text. */
  position(offset: number): { line: number; column: number } {
    const starts = this.lineStarts();
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((starts[mid] ?? 0) <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - (starts[lo] ?? 0) + 1 };
  }

  /** The text of a 1-based line, without its line break. */
  line(n: number): string {
    const starts = this.lineStarts();
    const start = starts[n - 1];
    if (start === undefined) return '';
    const next = starts[n];
    let end = next === undefined ? this.text.length : next - 1;
    if (end > start && this.text.charCodeAt(end - 1) === 13) end--;
    return this.text.slice(start, end);
  }

  get lineCount(): number {
    return this.lineStarts().length;
  }
}
