import { treeOrder } from './tree';

const r = (id: string, parentRequirementId: string | null = null) => ({ id, parentRequirementId });

describe(treeOrder.name, () => {
  it('puts children right after their parent, indented', () => {
    const rows = treeOrder([r('a'), r('b'), r('a1', 'a'), r('a1x', 'a1'), r('b1', 'b')]);
    expect(rows.map((row) => `${row.item.id}:${row.depth}`)).toEqual(['a:0', 'a1:1', 'a1x:2', 'b:0', 'b1:1']);
  });

  it('shows a child whose parent is elsewhere as a root', () => {
    expect(treeOrder([r('c', 'not-here')]).map((row) => row.depth)).toEqual([0]);
  });

  it('survives a cycle in bad data', () => {
    const rows = treeOrder([r('x', 'y'), r('y', 'x')]);
    expect(rows.map((row) => row.item.id).sort()).toEqual(['x', 'y']);
  });
});
