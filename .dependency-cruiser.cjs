/**
 * The module boundaries, as rules (npm run check:boundaries; scripts/check-boundaries.mjs runs it
 * with the table-owner check). The API's map, which module may import which, is data in
 * apps/api/module-map.json; docs/architecture.md shows it. Type-only imports count: a loop
 * hidden behind `import type` is still a loop for whoever reads the code.
 */
const { modules } = require('./apps/api/module-map.json');

const API = '^apps/api/src/';
const escape = (name) => name.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&');

/** One rule per API module: it imports only itself and the modules the map lets it use. */
const mapRules = Object.entries(modules).map(([name, { uses }]) => ({
  name: `api-${name}-uses-only-its-map`,
  comment: `${name}/ may import only ${uses.join(', ') || 'nothing of the other modules'} (apps/api/module-map.json)`,
  severity: 'error',
  from: { path: `${API}${escape(name)}/` },
  to: { path: API, pathNot: `${API}(${[name, ...uses].map(escape).join('|')})/` },
}));

module.exports = {
  forbidden: [
    { name: 'no-circular', comment: 'a loop of imports, type-only ones included', severity: 'error', from: {}, to: { circular: true } },
    {
      name: 'api-folder-is-a-known-module',
      comment: 'every folder of apps/api/src is in apps/api/module-map.json',
      severity: 'error',
      from: { path: `${API}[^/]+/`, pathNot: `${API}(${Object.keys(modules).map(escape).join('|')})/` },
      to: {},
    },
    ...mapRules,
    {
      name: 'api-repository-stays-in-its-module',
      comment: "another module's repository is reached through that module's service, never imported",
      severity: 'error',
      from: { path: `${API}([^/]+)/` },
      to: { path: `${API}[^/]+/[^/]+\\.repository\\.ts$`, pathNot: `${API}$1/` },
    },
    {
      name: 'cli-lower-layers-never-import-commands-or-ui',
      comment: 'session/, api-client/ and device-login/ print nothing and know no command',
      severity: 'error',
      from: { path: '^apps/cli/src/(session|api-client|device-login)/' },
      to: { path: '^apps/cli/src/(commands|ui)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|node_modules)/|\\.spec\\.tsx?$|/migrations/' },
    tsPreCompilationDeps: true,
  },
};
