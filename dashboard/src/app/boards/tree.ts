// Parent/child Requirements as a tree inside one column: a child directly follows its parent
// when both are in the column; otherwise it stands alone (and says whose child it is).

export interface TreeRow<T> {
  item: T;
  depth: number;
}

export function treeOrder<T extends { id: string; parentRequirementId: string | null }>(
  items: readonly T[],
): TreeRow<T>[] {
  const ids = new Set(items.map((i) => i.id));
  const children = new Map<string, T[]>();
  const roots: T[] = [];
  for (const item of items) {
    const parent = item.parentRequirementId;
    if (parent && ids.has(parent) && parent !== item.id) {
      const list = children.get(parent) ?? [];
      list.push(item);
      children.set(parent, list);
    } else {
      roots.push(item);
    }
  }
  const out: TreeRow<T>[] = [];
  const seen = new Set<string>();
  const visit = (item: T, depth: number): void => {
    if (seen.has(item.id)) {
      return; // a cycle in bad data must not hang the board
    }
    seen.add(item.id);
    out.push({ depth, item });
    for (const child of children.get(item.id) ?? []) {
      visit(child, Math.min(depth + 1, 4));
    }
  };
  roots.forEach((r) => visit(r, 0));
  // Anything only reachable through a cycle still shows.
  items.filter((i) => !seen.has(i.id)).forEach((i) => visit(i, 0));
  return out;
}
