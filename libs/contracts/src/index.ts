export * from './enums';
export * from './events';
export * from './resources';
export * from './limits';
