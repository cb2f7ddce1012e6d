/** A variable name as a list of them takes it (`agentEnvironmentPass`): a name, or a prefix ending in `*`. */
export const VARIABLE_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*\*?$/;
