/**
 * Rows the write path reads again and again (a Requirement and its session on every message),
 * kept in memory between units. Correct only because this process is the one writer of its
 * database (the instance lock): units update the cached objects as they write them, and any
 * rollback clears everything, since a failed unit may have changed objects it did not commit.
 */
export class WriteCache {
  private readonly entries = new Map<string, unknown>();

  constructor(private readonly capacity: number) {}

  get<T>(key: string): T | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      // Least recently used goes first: move this one to the end.
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value as T | undefined;
  }

  set(key: string, value: unknown): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
