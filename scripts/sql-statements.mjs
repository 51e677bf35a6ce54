/**
 * The SQL statements a TypeScript file of the API sends, and the tables each one writes, locks and
 * reads: what scripts/check-boundaries.mjs holds to the module map (issue #43, finding 10).
 *
 * Extraction reads the file's syntax tree (the TypeScript compiler's parser, no type checking, so
 * it stays fast): a statement is the text given to `.rows(` or `.count(` of the `Sql` helper
 * (database/sql.ts) or to any `.query(`, built from its string and template literals, with the
 * module-level or local `const` texts it names or interpolates (`${FAMILY_COLUMNS}`, `${roots}`,
 * `cond ? 'a' : 'b'` as both), a constant table of statements (an object literal, or
 * `Object.fromEntries([...].map((x) => [x, \`…\`]))`), and the calls of a `*.sql-fragment.ts`
 * helper rendered by running that helper (its text is its module's: a table it names counts as
 * its owner's). Every string or template literal anywhere that starts like a statement and parses
 * as one is read too, so SQL kept in a variable is not missed. What cannot be known statically
 * (`${someCall()}`) becomes a placeholder that keeps the statement parseable (an identifier, or an
 * `x = NULL` in a SET list); a statement that still does not parse, a table named by a
 * placeholder, or a call whose text is not a constant at all is "SQL the checker cannot read",
 * unless `// sql-opaque: <why>` stands just above the call.
 *
 * Parsing is Postgres's own parser (libpg-query: libpg_query compiled to WASM, no native build), so
 * lower-case keywords, quoted and schema-qualified names (`public.users` is `users`) read as the
 * server reads them.
 */
import { createRequire } from 'node:module';
import { posix } from 'node:path';
import vm from 'node:vm';
import { loadModule, parseSync } from 'libpg-query';

/** Required, not imported: an ESM import of typescript.js first scans its 9 MB for named exports (over a second). */
const ts = createRequire(import.meta.url)('typescript');

/** The comment that lets a call send a text the checker cannot read (the Sql helper passing its caller's text on). */
export const OPAQUE = '// sql-opaque:';
/** How a literal that may be a statement starts; it counts as one only if it also parses. */
const STATEMENT_START = /^\s*(?:select|insert|update|delete|with|merge|truncate|lock)\b/i;
/** A file without this has no literal that starts like a statement and no `.rows`/`.count`/`.query` call. */
const MAY_HOLD_SQL = /\.(?:rows|count|query)\b|[`'"]\s*(?:select|insert|update|delete|with|merge|truncate|lock)\b/i;
const HOLE = /^__sql_(?:hole|arg)_\d+__$/;
/** At most this many variants of one statement (each `a ? 'x' : 'y'` doubles them). */
const MAX_VARIANTS = 64;

let loaded;
/** libpg-query's WASM module, loaded once (some 30 ms). */
export function loadParser() {
  loaded ??= loadModule();
  return loaded;
}

/** Strips what changes no value: parentheses, `as`, `satisfies`, `!`. */
function bare(node) {
  while (
    ts.isParenthesizedExpression(node) ||
    ts.isAsExpression(node) ||
    ts.isSatisfiesExpression(node) ||
    ts.isNonNullExpression(node) ||
    ts.isTypeAssertionExpression(node)
  ) {
    node = node.expression;
  }
  return node;
}

const limit = (variants) => variants.slice(0, MAX_VARIANTS);
/** Every combination of one variant of each part (each variant is a list of pieces). */
function product(parts) {
  let out = [[]];
  for (const part of parts) out = limit(out.flatMap((prefix) => part.map((variant) => [...prefix, ...variant])));
  return out;
}

/**
 * A `*.sql-fragment.ts` module, run: its exported functions render SQL text. Fragments import
 * types only (their text must be self-contained), so the transpiled module runs alone.
 */
export function loadFragment(text) {
  const { outputText } = ts.transpileModule(text, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } });
  const module = { exports: {} };
  vm.runInNewContext(outputText, { module, exports: module.exports, require: () => ({}), TypeError, Error });
  return module.exports;
}

/**
 * The statements of one file. `path` is under apps/api/src ('users/users.repository.ts');
 * `fragments` maps each fragment's path to { module, exports } (loadFragment).
 * Answers { statements: [{ line, text, tables: [{ table, kind: 'write'|'lock'|'read', module, line }] }],
 * unreadable: [{ line, why }], sqlCalls: [line] } (sqlCalls: every call that sends SQL, readable or not).
 */
export function statementsOf(path, text, fragments = new Map()) {
  // Most files have neither a call that sends SQL nor a literal that starts like a statement: not parsed.
  if (!MAY_HOLD_SQL.test(text)) return { statements: [], unreadable: [], sqlCalls: [] };
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const module = path.includes('/') ? path.split('/')[0] : '';
  const lineOf = (pos) => sf.getLineAndCharacterOfPosition(pos).line + 1;
  const lines = text.split('\n');
  const opaque = (line) => lines.slice(Math.max(0, line - 4), line).some((l) => l.includes(OPAQUE));
  const consumed = new Set();
  const statements = [];
  const unreadable = [];
  const sqlCalls = [];
  const sqlNames = sqlHolders(sf);
  let holes = 0;
  const resolving = new Set();

  /** A literal's text as one piece, positioned at its first character in the file. */
  const literal = (node, value = node.text) => [{ text: value, pos: node.getStart(sf) + 1, owner: null }];

  /** The variants of the SQL text an expression stands for, each a list of pieces; null if it is not known. */
  function resolve(node) {
    node = bare(node);
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
      consumed.add(node);
      return [literal(node)];
    }
    if (ts.isNumericLiteral(node)) return [literal(node)];
    if (ts.isTemplateExpression(node)) {
      consumed.add(node);
      const parts = [[literal(node.head)]];
      for (const span of node.templateSpans) {
        parts.push(resolve(span.expression) ?? [[{ hole: true, pos: span.expression.getStart(sf) }]]);
        parts.push([literal(span.literal)]);
      }
      return product(parts);
    }
    if (ts.isConditionalExpression(node)) {
      const [yes, no] = [resolve(node.whenTrue), resolve(node.whenFalse)];
      return yes && no ? limit([...yes, ...no]) : null;
    }
    if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) {
      const [left, right] = [resolve(node.left), resolve(node.right)];
      return left && right ? product([left, right]) : null;
    }
    if (ts.isIdentifier(node)) return resolveName(node);
    if (ts.isElementAccessExpression(node) || ts.isPropertyAccessExpression(node)) return valuesOfTable(node.expression);
    if (ts.isCallExpression(node)) return renderFragment(node);
    return null;
  }

  function resolveName(node) {
    const binding = lookup(node);
    if (!binding || resolving.has(binding.node)) return null;
    resolving.add(binding.node);
    try {
      if (binding.kind === 'const') return resolve(binding.node.initializer);
      if (binding.kind === 'param') return parameterValues(binding.node)?.map((value) => [{ text: value, pos: binding.node.getStart(sf), owner: null }]) ?? null;
      return null;
    } finally {
      resolving.delete(binding.node);
    }
  }

  /** Every value of a constant table of statements: `{ a: '…', b: '…' }` or `Object.fromEntries(list.map((x) => [x, '…']))`. */
  function valuesOfTable(node) {
    node = bare(node);
    if (ts.isIdentifier(node)) {
      const binding = lookup(node);
      return binding?.kind === 'const' && !resolving.has(binding.node) ? withGuard(binding.node, () => valuesOfTable(binding.node.initializer)) : null;
    }
    if (ts.isObjectLiteralExpression(node)) {
      const values = node.properties.map((p) => (ts.isPropertyAssignment(p) ? resolve(p.initializer) : null));
      return values.every(Boolean) ? limit(values.flat()) : null;
    }
    if (ts.isCallExpression(node) && node.expression.getText(sf) === 'Object.fromEntries' && node.arguments.length === 1) {
      const entries = bare(node.arguments[0]);
      if (ts.isArrayLiteralExpression(entries)) {
        const values = entries.elements.map((e) => (ts.isArrayLiteralExpression(bare(e)) ? resolve(bare(e).elements[1]) : null));
        return values.every(Boolean) ? limit(values.flat()) : null;
      }
      if (ts.isCallExpression(entries) && ts.isPropertyAccessExpression(entries.expression) && entries.expression.name.text === 'map') {
        const fn = entries.arguments[0];
        const body = fn && (ts.isArrowFunction(fn) || ts.isFunctionExpression(fn)) ? returned(fn) : null;
        return body && ts.isArrayLiteralExpression(bare(body)) ? resolve(bare(body).elements[1]) : null;
      }
    }
    return null;
  }

  function withGuard(key, run) {
    resolving.add(key);
    try {
      return run();
    } finally {
      resolving.delete(key);
    }
  }

  /** The values a parameter takes when the code says so: a union of string literal types, or `['a', 'b'].map((x) => …)`. */
  function parameterValues(param) {
    const type = param.type;
    const literals = (t) => (ts.isLiteralTypeNode(t) && ts.isStringLiteral(t.literal) ? [t.literal.text] : null);
    if (type && ts.isUnionTypeNode(type)) {
      const values = type.types.map(literals);
      if (values.every(Boolean)) return values.flat();
    } else if (type && literals(type)) {
      return literals(type);
    }
    const fn = param.parent;
    const call = fn.parent;
    if (fn.parameters[0] === param && ts.isCallExpression(call) && ts.isPropertyAccessExpression(call.expression) && ['map', 'flatMap'].includes(call.expression.name.text)) {
      const list = bare(call.expression.expression);
      if (ts.isArrayLiteralExpression(list) && list.elements.every((e) => ts.isStringLiteral(bare(e)))) return list.elements.map((e) => bare(e).text);
    }
    return null;
  }

  /**
   * A call of a fragment helper, rendered by running it with the call's arguments (each string in
   * them the caller's SQL; a value not known statically becomes a placeholder name). The text the
   * helper adds is the fragment's module's; the caller's strings found in it stay the caller's.
   */
  function renderFragment(call) {
    const callee = bare(call.expression);
    const binding = ts.isIdentifier(callee) ? lookup(callee) : null;
    if (binding?.kind !== 'import' || !binding.from.endsWith('.sql-fragment.js')) return null;
    const fragmentPath = posix.normalize(posix.join(posix.dirname(path), binding.from)).replace(/\.js$/, '.ts');
    const fragment = fragments.get(fragmentPath);
    const fn = fragment?.exports[binding.name];
    if (typeof fn !== 'function') return null;
    const args = product(call.arguments.map((arg) => valuesOf(arg).map((v) => [v])));
    return limit(
      args.flatMap((variant) => {
        const values = variant.map((v) => v.value);
        const leaves = variant.flatMap((v) => v.leaves).filter((leaf) => leaf.length > 1);
        let rendered;
        try {
          rendered = fn(...values);
        } catch (err) {
          unreadable.push({ line: lineOf(call.getStart(sf)), why: `${binding.name}(…) from ${fragmentPath} refused its arguments (${err.message})` });
          return [];
        }
        if (typeof rendered !== 'string') return [];
        // Whose is each character: the fragment's, unless it is one of the caller's strings.
        const owners = new Array(rendered.length).fill(fragment.module);
        for (const leaf of [...new Set(leaves)].sort((a, b) => b.length - a.length)) {
          for (let at = rendered.indexOf(leaf); at >= 0; at = rendered.indexOf(leaf, at + leaf.length)) {
            if (owners.slice(at, at + leaf.length).every((o) => o === fragment.module)) owners.fill(null, at, at + leaf.length);
          }
        }
        const pieces = [];
        for (let at = 0; at < rendered.length; ) {
          let end = at;
          while (end < rendered.length && owners[end] === owners[at]) end++;
          pieces.push({ text: rendered.slice(at, end), pos: call.getStart(sf), owner: owners[at] });
          at = end;
        }
        return [pieces];
      }),
    );
  }

  /** The JS values an argument of a fragment helper takes, with the strings in each (the caller's SQL). */
  function valuesOf(node) {
    node = bare(node);
    if (ts.isIdentifier(node) && node.text === 'undefined') return [{ value: undefined, leaves: [] }];
    if (ts.isObjectLiteralExpression(node)) {
      const props = node.properties.map((p) => {
        if (ts.isPropertyAssignment(p)) return { key: p.name.getText(sf).replace(/^['"]|['"]$/g, ''), values: valuesOf(p.initializer) };
        if (ts.isShorthandPropertyAssignment(p)) return { key: p.name.text, values: valuesOf(p.name) };
        return null;
      });
      if (props.some((p) => !p)) return [placeholder(node)];
      return limit(
        product(props.map((p) => p.values.map((v) => [{ key: p.key, ...v }]))).map((entries) => ({
          value: Object.fromEntries(entries.map((e) => [e.key, e.value])),
          leaves: entries.flatMap((e) => e.leaves),
        })),
      );
    }
    if (ts.isArrayLiteralExpression(node)) {
      return limit(product(node.elements.map((e) => valuesOf(e).map((v) => [v]))).map((items) => ({ value: items.map((i) => i.value), leaves: items.flatMap((i) => i.leaves) })));
    }
    const texts = resolve(node);
    if (!texts) return [placeholder(node)];
    return texts.map((pieces) => {
      const value = assemble(pieces, 'name').text;
      return { value, leaves: [value] };
    });
  }

  function placeholder() {
    const name = `__sql_arg_${++holes}__`;
    return { value: name, leaves: [name] };
  }

  /** Where a name is bound: the nearest enclosing parameter or `const`, or an import. */
  function lookup(identifier) {
    const name = identifier.text;
    for (let node = identifier.parent; node; node = node.parent) {
      if (ts.isFunctionLike(node)) {
        const param = node.parameters?.find((p) => ts.isIdentifier(p.name) && p.name.text === name);
        if (param) return { kind: 'param', node: param };
      }
      for (const statement of node.statements ?? []) {
        if (ts.isVariableStatement(statement)) {
          const declaration = statement.declarationList.declarations.find((d) => ts.isIdentifier(d.name) && d.name.text === name);
          if (declaration) {
            const isConst = (statement.declarationList.flags & ts.NodeFlags.Const) !== 0;
            return isConst && declaration.initializer ? { kind: 'const', node: declaration } : { kind: 'other', node: declaration };
          }
        }
        if (ts.isImportDeclaration(statement) && statement.importClause?.namedBindings && ts.isNamedImports(statement.importClause.namedBindings)) {
          const spec = statement.importClause.namedBindings.elements.find((e) => e.name.text === name);
          if (spec) return { kind: 'import', node: spec, from: statement.moduleSpecifier.text, name: (spec.propertyName ?? spec.name).text };
        }
      }
    }
    return null;
  }

  /** One variant of a statement as text, its placeholders written as `kind` ('name', or 'assignment' for a SET list). */
  function assemble(pieces, kind) {
    let text = '';
    const segments = [];
    for (const piece of pieces) {
      const start = text.length;
      if (piece.hole) {
        piece.name ??= `__sql_hole_${++holes}__`;
        text += kind === 'assignment' ? `${piece.name} = NULL` : piece.name;
      } else {
        text += piece.text;
      }
      segments.push({ start, end: text.length, pos: piece.pos, owner: piece.owner, hole: piece.hole, literal: !piece.hole && piece.owner === null });
    }
    return { text, segments };
  }

  /** Parses one statement's variants and records its tables; false when none parses. */
  function analyse(variants, line, kind) {
    let parsedAny = false;
    for (const pieces of variants) {
      let parsed = null;
      let error = null;
      for (const holeKind of pieces.some((p) => p.hole) ? ['name', 'assignment'] : ['name']) {
        const assembled = assemble(pieces, holeKind);
        try {
          parsed = { ...assembled, tree: parseSync(assembled.text) };
          break;
        } catch (err) {
          error ??= err;
        }
      }
      if (!parsed) {
        if (kind === 'call') unreadable.push({ line, why: `it does not parse (${error.message})` });
        continue;
      }
      parsedAny = true;
      const tables = tablesOf(parsed.tree).map((ref) => {
        const segment = parsed.segments.find((s) => ref.location >= s.start && ref.location < s.end) ?? parsed.segments.at(-1);
        const refLine = segment?.literal ? lineOf(segment.pos + (ref.location - segment.start)) : line;
        return { table: ref.table, kind: ref.kind, module: segment?.owner ?? module, line: refLine };
      });
      // A literal's own placeholders are filled at its calls (a fragment's `FROM ${row.from}`); a call's are not.
      if (kind === 'call') for (const ref of tables.filter((t) => HOLE.test(t.table))) unreadable.push({ line: ref.line, why: 'a table named by a value it cannot know' });
      statements.push({ line, text: parsed.text, tables: tables.filter((t) => !HOLE.test(t.table)) });
    }
    return parsedAny;
  }

  function visit(node) {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && isSqlCall(node.expression, sqlNames, sf)) {
      const line = lineOf(node.getStart(sf));
      sqlCalls.push(line);
      let argument = node.arguments[0] && bare(node.arguments[0]);
      if (argument && ts.isObjectLiteralExpression(argument)) {
        const text = argument.properties.find((p) => ts.isPropertyAssignment(p) && p.name.getText(sf) === 'text');
        argument = text?.initializer;
      }
      const variants = argument ? resolve(argument) : null;
      if (variants?.length) analyse(variants, lineOf(argument.getStart(sf)), 'call');
      else if (!opaque(line)) unreadable.push({ line, why: `${node.arguments[0]?.getText(sf).slice(0, 60) ?? 'no text'} is not a constant text` });
    }
    ts.forEachChild(node, visit);
  }
  visit(sf);

  // Every other literal that starts like a statement and parses as one: SQL kept in a variable.
  (function strays(node) {
    if ((ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node)) && !consumed.has(node)) {
      const head = ts.isTemplateExpression(node) ? node.head.text : node.text;
      if (STATEMENT_START.test(head)) {
        const variants = resolve(node);
        if (variants) analyse(variants, lineOf(node.getStart(sf)), 'literal');
      }
      return;
    }
    ts.forEachChild(node, strays);
  })(sf);

  return { statements, unreadable, sqlCalls };
}

/** Names that hold the `Sql` helper in a file: whatever is declared `: Sql` (a constructor's `private readonly sql: Sql`). */
function sqlHolders(sf) {
  const names = new Set(['sql']);
  (function walk(node) {
    if ((ts.isParameter(node) || ts.isPropertyDeclaration(node) || ts.isVariableDeclaration(node)) && node.type && ts.isTypeReferenceNode(node.type) && node.type.typeName.getText(sf) === 'Sql' && ts.isIdentifier(node.name)) {
      names.add(node.name.text);
    }
    ts.forEachChild(node, walk);
  })(sf);
  return names;
}

/** `sql.rows(…)`, `this.sql.count(…)` (the Sql helper, or `this` inside it), or any `.query(…)`. */
function isSqlCall(callee, sqlNames, sf) {
  const method = callee.name.text;
  if (method === 'query') return true;
  if (method !== 'rows' && method !== 'count') return false;
  const receiver = bare(callee.expression);
  if (ts.isIdentifier(receiver) || ts.isPropertyAccessExpression(receiver)) return sqlNames.has(ts.isIdentifier(receiver) ? receiver.text : receiver.name.text);
  if (receiver.kind === ts.SyntaxKind.ThisKeyword) {
    for (let node = receiver.parent; node; node = node.parent) if (ts.isClassLike(node)) return node.name?.text === 'Sql';
  }
  return false;
}

function returned(fn) {
  if (!ts.isBlock(fn.body)) return fn.body;
  const statement = fn.body.statements.find(ts.isReturnStatement);
  return statement?.expression ?? null;
}

/** A table's name as the check compares it: lower case, `public.` dropped, another schema kept. */
function tableName(rangeVar) {
  const name = rangeVar.relname.toLowerCase();
  const schema = rangeVar.schemaname?.toLowerCase();
  return schema && schema !== 'public' ? `${schema}.${name}` : name;
}

const WRITES = ['InsertStmt', 'UpdateStmt', 'DeleteStmt', 'MergeStmt'];

/**
 * The tables a parsed statement (libpg-query's tree) writes (INSERT, UPDATE, DELETE, MERGE,
 * TRUNCATE), locks (`FOR UPDATE/NO KEY UPDATE/SHARE/KEY SHARE [OF …]`, LOCK) and reads (every
 * other table it names: FROM, JOIN, subqueries, CTE bodies), with where each is named; a CTE's
 * name is not a table.
 */
export function tablesOf(tree) {
  const ctes = new Set();
  (function collect(node) {
    if (Array.isArray(node)) return node.forEach(collect);
    if (!node || typeof node !== 'object') return;
    if (node.CommonTableExpr) ctes.add(node.CommonTableExpr.ctename.toLowerCase());
    Object.values(node).forEach(collect);
  })(tree);
  const refs = [];
  const isCte = (rangeVar) => !rangeVar.schemaname && ctes.has(rangeVar.relname.toLowerCase());
  const add = (rangeVar, kind) => {
    if (rangeVar && !isCte(rangeVar)) refs.push({ table: tableName(rangeVar), kind, location: rangeVar.location ?? 0 });
  };

  /** The relations a FROM list makes visible, by the name a locking clause would use. */
  function fromItems(list, into = new Map()) {
    for (const item of list ?? []) {
      if (item.RangeVar) into.set((item.RangeVar.alias?.aliasname ?? item.RangeVar.relname).toLowerCase(), { rangeVar: item.RangeVar });
      else if (item.JoinExpr) fromItems([item.JoinExpr.larg, item.JoinExpr.rarg], into);
      else if (item.RangeSubselect?.alias) into.set(item.RangeSubselect.alias.aliasname.toLowerCase(), { select: item.RangeSubselect.subquery.SelectStmt });
    }
    return into;
  }
  /** Every relation of a FROM item, into its subqueries: what a lock on it reaches. */
  function lockAll(item) {
    if (item.rangeVar) return add(item.rangeVar, 'lock');
    const select = item.select;
    if (!select) return;
    if (select.larg || select.rarg) return [select.larg, select.rarg].forEach((s) => s && lockAll({ select: s }));
    for (const inner of fromItems(select.fromClause).values()) lockAll(inner);
  }

  (function walk(node) {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'RangeVar') {
        add(value, 'read');
      } else if (WRITES.includes(key)) {
        add(value.relation, 'write');
        const { relation, ...rest } = value;
        walk(rest);
      } else if (key === 'TruncateStmt') {
        for (const r of value.relations ?? []) add(r.RangeVar, 'write');
      } else if (key === 'LockStmt') {
        for (const r of value.relations ?? []) add(r.RangeVar, 'lock');
      } else if (key === 'SelectStmt' && value.lockingClause) {
        const items = fromItems(value.fromClause);
        for (const { LockingClause: clause } of value.lockingClause) {
          if (!clause.lockedRels?.length) for (const item of items.values()) lockAll(item);
          for (const { RangeVar: name } of clause.lockedRels ?? []) {
            const item = items.get(name.relname.toLowerCase());
            if (item) lockAll(item);
            else add(name, 'lock');
          }
        }
        const { lockingClause, ...rest } = value;
        walk(rest);
      } else {
        walk(value);
      }
    }
  })(tree);
  return refs;
}
