/**
 * A slug from a name, as the page's script suggests it (public/org-slug.js): what a person without
 * JavaScript who leaves the slug empty gets. Accents dropped, anything else a hyphen, cut to 40.
 */
export function suggestSlug(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, 40)
    .replace(/-+$/, '');
}
