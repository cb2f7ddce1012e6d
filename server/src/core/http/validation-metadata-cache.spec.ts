import { IsInt, IsString, Min, getMetadataStorage, validateSync } from 'class-validator';

import { cacheValidationMetadata } from './validation-metadata-cache';

class Base {
  @IsString()
  name!: unknown;
}

class Derived extends Base {
  @IsInt()
  count!: unknown;
}

const errorsOf = (value: object) =>
  validateSync(value, { forbidNonWhitelisted: true, whitelist: true })
    .map((e) => `${e.property}:${Object.keys(e.constraints ?? {}).join(',')}`)
    .sort();

describe('cacheValidationMetadata', () => {
  beforeAll(() => cacheValidationMetadata());

  it('answers as class-validator does, inherited rules included, and once per class', () => {
    const storage = getMetadataStorage();
    const first = storage.getTargetValidationMetadatas(Derived, '', false, false);
    expect(storage.getTargetValidationMetadatas(Derived, '', false, false)).toBe(first);
    expect(first.map((m) => m.propertyName).sort()).toEqual(['count', 'name']);
    expect(errorsOf(Object.assign(new Derived(), { count: 'x', name: 1 }))).toEqual(['count:isInt', 'name:isString']);
    expect(errorsOf(Object.assign(new Derived(), { count: 2, extra: true, name: 'a' }))).toEqual([
      'extra:whitelistValidation',
    ]);
  });

  it('forgets what it remembered when a rule is registered later (a class decorated after the first request)', () => {
    expect(errorsOf(Object.assign(new Derived(), { count: -1, name: 'a' }))).toEqual([]);
    Min(0)(Derived.prototype, 'count');
    expect(errorsOf(Object.assign(new Derived(), { count: -1, name: 'a' }))).toEqual(['count:min']);
    // The base class's new rule reaches the subclass too.
    Min(0)(Base.prototype, 'name');
    expect(errorsOf(Object.assign(new Derived(), { count: 1, name: 'a' }))).toEqual(['name:min']);
  });

  it('is installed once', () => {
    const storage = getMetadataStorage();
    const installed = storage.getTargetValidationMetadatas;
    cacheValidationMetadata();
    expect(storage.getTargetValidationMetadatas).toBe(installed);
  });
});
