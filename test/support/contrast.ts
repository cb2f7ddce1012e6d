import type { Locator } from 'playwright-core';

// What a person sees of a text's colour on its background, measured in the page (WCAG 2 contrast).
// The page's globals used in `evaluate`, typed just enough (the tests compile without the DOM library).
interface El {
  parentElement: El | null;
}
declare function getComputedStyle(element: El): { color: string; backgroundColor: string; filter: string };

type Rgba = [number, number, number, number];
const parse = (c: string): Rgba => {
  const [r = 0, g = 0, b = 0, a = 1] = (c.match(/[\d.]+/g) ?? []).map(Number);
  return [r, g, b, a];
};
/** `top` painted over the opaque `bottom`. */
const over = (top: Rgba, bottom: Rgba): Rgba =>
  [0, 1, 2].map((i) => top[i] * top[3] + bottom[i] * (1 - top[3])).concat(1) as Rgba;
const luminance = ([r, g, b]: Rgba) => {
  const lin = (v: number) => (v / 255 <= 0.03928 ? v / 255 / 12.92 : ((v / 255 + 0.055) / 1.055) ** 2.4);
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
};
/** WCAG contrast ratio of two opaque colours. */
const ratioOf = (a: Rgba, b: Rgba) => {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
};

export interface Contrast {
  /** The text's contrast with what is painted behind it. */
  ratio: number;
  /** The luminance of that background (0 black, 1 white). */
  background: number;
  /** CSS filters from the element up: computed colours say nothing about one, so a measure needs none. */
  filters: string[];
}

/** The contrast of the element's text: every background from it up to the root, translucent ones painted over those behind. */
export async function contrastOf(element: Locator): Promise<Contrast> {
  const { chain, filters, text } = await element.evaluate((el) => {
    const chain: string[] = [];
    const filters: string[] = [];
    for (let e: El | null = el; e; e = e.parentElement) {
      chain.push(getComputedStyle(e).backgroundColor);
      filters.push(getComputedStyle(e).filter);
    }
    return { chain, filters: filters.filter((f) => f !== 'none'), text: getComputedStyle(el).color };
  });
  const background = chain.reduceRight<Rgba>((behind, c) => over(parse(c), behind), [255, 255, 255, 1]);
  return { background: luminance(background), filters, ratio: ratioOf(over(parse(text), background), background) };
}
