import type { components } from '@libs/api-client';

import type { I18n } from '../core/i18n';
import type { MessageKey } from '../core/i18n-messages';

type DoctorCheck = components['schemas']['DoctorCheckDto'];
type Loose = (key: MessageKey, params?: Record<string, string | number>) => string;

/**
 * A doctor finding in the reader's language (issue 26 §13): its title by check id, its detail and
 * fix by its code, filled with its arguments (paths, versions and the tools' own error text stay
 * as they are). A code this build does not know (a newer server) shows the English text.
 */
export function doctorText(
  check: Pick<DoctorCheck, 'id' | 'title' | 'detail' | 'fix' | 'code' | 'args'>,
  i18n: I18n,
): { title: string; detail: string; fix: string | null } {
  const t = i18n.t as unknown as Loose;
  const known = (key: string, params?: Record<string, string | number>): string | null => {
    const text = t(key as MessageKey, params);
    return text === key ? null : text;
  };
  const args = (check.args ?? {}) as Record<string, string | number | boolean | null>;
  const params = Object.fromEntries(
    Object.entries(args).map(([name, value]) => [
      name,
      value === null ? '' : typeof value === 'boolean' ? String(value) : value,
    ]),
  );
  const title = known(`doctor.title.${check.id}`) ?? check.title;
  let detail = check.code ? known(`doctor.${check.code}`, params) : null;
  if (detail === null) {
    return { detail: check.detail, fix: check.fix, title };
  }
  if (typeof args['holder'] === 'string' && args['holder']) {
    detail += t('doctor.holder', { holder: args['holder'] });
  }
  if (args['noAgent']) {
    detail += t('doctor.noAgent');
  } else if (typeof args['otherCli'] === 'string') {
    detail += t('doctor.otherCli', { other: args['otherCli'] });
  }
  const fix = check.fix === null ? null : (known(`doctor.fix.${check.code}`, params) ?? check.fix);
  return { detail, fix, title };
}
