// The fast path for chat lines without any markup (pure, unit-tested).

/** Text with none of Markdown's or HTML's special characters renders the same without either. */
export const PLAIN =
  /^(?![\s\S]*(?:[<>&*_`#[\]!|~\\]|:\/\/|www\.|(?:^|\n)(?: {4}|\t)|(?:^|\n)[ \t]*(?:[-+=]|\d+[.)])))/;

export function plainHtml(text: string): string {
  return text
    .trim()
    .split(/\n{2,}/)
    .map((paragraph) => `<p>${paragraph.replace(/\n/g, '<br>')}</p>`)
    .join('');
}
