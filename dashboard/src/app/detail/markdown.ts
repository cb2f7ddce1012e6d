import { Injectable, inject } from '@angular/core';
import { DomSanitizer, type SafeHtml } from '@angular/platform-browser';
import DOMPurify from 'dompurify';
import { Marked } from 'marked';

import { PLAIN, plainHtml } from './plain-text';

// Descriptions and agent answers are Markdown written by people, agents and GitHub reviewers:
// untrusted. marked renders, DOMPurify removes anything active, and only then is the result
// marked safe for Angular (whose own sanitizer would otherwise run a second, lossy pass).

// Raw HTML inside the Markdown is shown as text, never parsed: a browser that parses
// `<img onerror=…>` even in DOMPurify's detached document checks the handler against the page's
// CSP and logs a violation for each one (Chromium 156 does), and nothing legitimate in a
// conversation needs it. What marked itself emits carries no handler attributes; DOMPurify
// stays as the second line (it still removes `javascript:` links and the like).
const marked = new Marked({
  breaks: true,
  gfm: true,
  renderer: {
    html: ({ text }) => escapeHtml(text),
  },
});

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  // Links open outside the dashboard and cannot reach back into it.
  if (node.tagName === 'A' && node.getAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

const CACHE_LIMIT = 2000;

@Injectable({ providedIn: 'root' })
export class MarkdownRenderer {
  private readonly sanitizer = inject(DomSanitizer);
  /** Messages never change once written, so their HTML is rendered once. */
  private readonly cache = new Map<string, SafeHtml>();

  render(text: string, cacheKey?: string): SafeHtml {
    if (cacheKey) {
      const hit = this.cache.get(cacheKey);
      if (hit) {
        return hit;
      }
    }
    // Most chat lines are plain sentences: skip the parser and the sanitizer for them (the
    // sanitizer builds a DOM per call, the bulk of the cost when a long conversation opens).
    const html = PLAIN.test(text)
      ? plainHtml(text)
      : DOMPurify.sanitize(marked.parse(text, { async: false }), { FORBID_TAGS: ['style', 'form', 'input', 'button'] });
    const safe = this.sanitizer.bypassSecurityTrustHtml(html);
    if (cacheKey) {
      if (this.cache.size >= CACHE_LIMIT) {
        this.cache.delete(this.cache.keys().next().value as string);
      }
      this.cache.set(cacheKey, safe);
    }
    return safe;
  }
}
