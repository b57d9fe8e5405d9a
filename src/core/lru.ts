/**
 * A map that keeps at most `max` entries, dropping the least recently used: the caches of a long-lived
 * process (a server, a worker) that meets ever new keys (compiled workflows, stored workflow records)
 * must not grow with everything it ever saw.
 */
export class Lru<K, V> {
  private readonly map = new Map<K, V>();
  constructor(readonly max: number) {}

  get(key: K): V | undefined {
    const v = this.map.get(key);
    if (v === undefined) return undefined;
    // most recently used last
    this.map.delete(key);
    this.map.set(key, v);
    return v;
  }

  set(key: K, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    while (this.map.size > this.max) this.map.delete(this.map.keys().next().value!);
  }

  get size(): number {
    return this.map.size;
  }
}
