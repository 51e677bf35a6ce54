import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NestExpressApplication } from '@nestjs/platform-express';
import hbs from 'hbs';

/** Templates live beside src/ and dist/, so both the tests and the build find them. */
export const VIEWS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'views');

/**
 * Pages are Handlebars templates (`views/*.hbs`) rendered inside `views/layout.hbs`.
 * `{{value}}` is HTML-escaped; the templates never use the raw `{{{…}}}` form but for
 * the layout's body. Compiled templates are cached: they ship with the build.
 */
export function configureViews(app: NestExpressApplication): void {
  const partials = join(VIEWS_DIR, 'partials');
  // Registered synchronously (hbs.registerPartials reads the folder asynchronously,
  // which would race the first request).
  for (const file of readdirSync(partials).filter((f) => f.endsWith('.hbs'))) {
    hbs.registerPartial(basename(file, '.hbs'), readFileSync(join(partials, file), 'utf8'));
  }
  app.setBaseViewsDir(VIEWS_DIR);
  app.setViewEngine('hbs');
  app.set('view cache', true);
}
