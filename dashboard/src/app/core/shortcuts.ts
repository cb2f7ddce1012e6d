/**
 * Whether a one-letter shortcut (`g n`, `j`/`k`, `r`) may act on this key press: not with a
 * modifier, not while typing (a field, an editable element, an input method composing), and
 * not behind an open dialog — a key meant for the dialog must not act on the page under it.
 */
export function shortcutAllowed(event: KeyboardEvent): boolean {
  if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) {
    return false;
  }
  const target = event.target instanceof Element ? event.target : null;
  if (target?.closest('input, textarea, select, [contenteditable]:not([contenteditable="false"])')) {
    return false;
  }
  return typeof document === 'undefined' || document.querySelector('dialog[open]') === null;
}
