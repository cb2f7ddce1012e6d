/**
 * The start policies: the checks an explicit start of a Requirement must pass, each a
 * `requirement.starting` handler of the feature that owns the rule, in the order a start asks
 * them. The first that refuses is the answer, so a start refused for two reasons names the first
 * here: a reached budget (409 budget_reached) before an unmet dependency (409 dependency_unmet),
 * both before a network that cannot be filtered (503). Each handler takes its place with
 * `@OnDomainEvent('requirement.starting', { order: startPolicy(…) })`;
 * test/integration/budgets.int-spec.ts checks the handlers against this list.
 */
export const START_POLICIES = ['budget', 'dependencies', 'network'] as const;

export type StartPolicy = (typeof START_POLICIES)[number];

/** The place of a start policy among the `requirement.starting` handlers (1 = asked first). */
export function startPolicy(policy: StartPolicy): number {
  return START_POLICIES.indexOf(policy) + 1;
}
