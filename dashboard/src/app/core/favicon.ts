import { DOCUMENT } from '@angular/common';
import { Injectable, inject } from '@angular/core';

const BASE = "<rect width='16' height='16' rx='4' fill='#3b5bdb'/><path d='M4 11l4-7 4 7z' fill='white'/>";

/**
 * The tab's icon carries how many items need the person (issue 47 §2), so a pinned or background
 * tab shows it: the app's icon with a red count in its corner (9+ past nine). An inline SVG data
 * URL, as index.html's own (the CSP allows data: images; nothing is fetched).
 */
@Injectable({ providedIn: 'root' })
export class Favicon {
  private readonly document = inject(DOCUMENT);

  show(count: number): void {
    const link = this.document.querySelector<HTMLLinkElement>('link[rel="icon"]');
    if (!link) {
      return;
    }
    const label = count > 9 ? '9+' : String(count);
    const badge =
      count > 0
        ? `<circle cx='11.5' cy='4.5' r='4.5' fill='#e03131'/><text x='11.5' y='7' font-size='${label.length > 1 ? 5 : 7}' font-family='sans-serif' font-weight='700' text-anchor='middle' fill='white'>${label}</text>`
        : '';
    const svg = `<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'>${BASE}${badge}</svg>`;
    link.href = `data:image/svg+xml,${encodeURIComponent(svg)}`;
    link.dataset['count'] = String(count);
  }
}
