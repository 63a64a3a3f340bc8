/**
 * The UI's module graph (ui/src) has no import cycle. In a cycle, whichever module loads first sees the other's
 * exports still unset (a `const` or `class` in its temporal dead zone, a value `undefined`), so the order the
 * bundler or the test happens to load them in decides whether the code works.
 *
 * Edges: `import ... from`, side-effect `import '...'`, `export ... from`, `import x = require(...)`,
 * `require(...)` and dynamic `import(...)` (a cycle cut by a lazy import still ties the two modules together),
 * naming `@/x` (tsconfig's paths: ui/src/x) or a relative path, resolved as the bundler does (x, x.ts, x.tsx,
 * x/index.ts, x/index.tsx). Only value imports count: `import type`, `export type ... from`, an import whose
 * every name is marked `type`, and `typeof import(...)` are erased before anything runs and cannot create a
 * load-order problem. A plain import used only for types counts (telling that needs the type checker); mark it
 * `type` if that is all it is. Sources are read with TypeScript's own parser, so comments and strings are not
 * mistaken for imports.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const UI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SRC = path.join(UI, 'src');
const EXTENSIONS = ['', '.ts', '.tsx', '/index.ts', '/index.tsx'];

type Graph = Map<string, Set<string>>;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [full] : [];
  });
}

/** Value-import specifiers of one source text (see the header for what counts). */
function valueImports(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true,
    fileName.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const found: string[] = [];
  const literal = (node: ts.Node | undefined) => {
    if (node && ts.isStringLiteralLike(node)) found.push(node.text);
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const named = clause?.namedBindings;
      const allTypeNames = !!named && ts.isNamedImports(named) && named.elements.length > 0 &&
        named.elements.every((e) => e.isTypeOnly) && !clause?.name;
      if (!clause?.isTypeOnly && !allTypeNames) literal(node.moduleSpecifier);
    } else if (ts.isExportDeclaration(node)) {
      const clause = node.exportClause;
      const allTypeNames = !!clause && ts.isNamedExports(clause) && clause.elements.length > 0 &&
        clause.elements.every((e) => e.isTypeOnly);
      if (!node.isTypeOnly && !allTypeNames) literal(node.moduleSpecifier);
    } else if (ts.isImportEqualsDeclaration(node)) {
      if (!node.isTypeOnly && ts.isExternalModuleReference(node.moduleReference)) {
        literal(node.moduleReference.expression);
      }
    } else if (ts.isCallExpression(node)) {
      const callee = node.expression;
      if (callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === 'require')) {
        literal(node.arguments[0]);
      }
    }
    ts.forEachChild(node, visit); // ImportTypeNode (`typeof import('x')`) is not a call: skipped
  };
  visit(source);
  return found;
}

/**
 * The file a specifier names inside ui/src, null for a package, undefined for an `@/` or relative specifier
 * that names no file (a broken import the graph would otherwise miss silently).
 */
function resolve(from: string, spec: string): string | null | undefined {
  let base: string;
  if (spec.startsWith('@/')) base = path.join(SRC, spec.slice(2));
  else if (spec.startsWith('./') || spec.startsWith('../')) base = path.resolve(path.dirname(from), spec);
  else return null;
  for (const ext of EXTENSIONS) {
    const candidate = base + ext;
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

function importGraph(): { graph: Graph; unresolved: string[] } {
  const graph: Graph = new Map();
  const unresolved: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const name = path.relative(SRC, file);
    const edges = new Set<string>();
    for (const spec of valueImports(file, readFileSync(file, 'utf8'))) {
      const target = resolve(file, spec);
      if (target === undefined) unresolved.push(`${name}: ${spec}`);
      else if (target && /\.tsx?$/.test(target)) edges.add(path.relative(SRC, target));
    }
    edges.delete(name);
    graph.set(name, edges);
  }
  return { graph, unresolved };
}

/** Strongly connected components of more than one module (Tarjan), each sorted, components sorted. */
function cycles(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const strongConnect = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const child of [...(graph.get(node) ?? [])].sort()) {
      if (!index.has(child)) {
        strongConnect(child);
        low.set(node, Math.min(low.get(node)!, low.get(child)!));
      } else if (onStack.has(child)) {
        low.set(node, Math.min(low.get(node)!, index.get(child)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) strongConnect(node);
  return found.sort((a, b) => a[0].localeCompare(b[0]));
}

/** One loop through a component's first module, for the failure message: `a -> b -> c -> a`. */
function loopThrough(graph: Graph, component: string[]): string {
  const members = new Set(component);
  const start = component[0];
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const node = queue.shift()!;
    for (const child of [...(graph.get(node) ?? [])].sort()) {
      if (!members.has(child)) continue;
      if (child === start) {
        const pathBack = [node];
        while (pathBack[0] !== start) pathBack.unshift(previous.get(pathBack[0])!);
        return [...pathBack, start].join(' -> ');
      }
      if (!previous.has(child)) {
        previous.set(child, node);
        queue.push(child);
      }
    }
  }
  return component.join(', ');
}

describe('import graph of ui/src', () => {
  it('has no cycle of value imports, and every @/ and relative import names a file', () => {
    const { graph, unresolved } = importGraph();
    expect(graph.size).toBeGreaterThan(50); // the walk found the sources
    expect(unresolved).toEqual([]);
    const loops = cycles(graph).map((c) => `${loopThrough(graph, c)}   (component: ${c.join(', ')})`);
    expect(loops).toEqual([]);
  });

  it('finds a planted cycle, one closed by a dynamic import, and ignores type-only imports', () => {
    const { graph } = importGraph();
    const planted: Graph = new Map([...graph].map(([k, v]) => [k, new Set(v)]));
    const [a, b] = ['server/worker.ts', 'server/jobs.ts'];
    expect(planted.get(a)!.has(b)).toBe(true); // the planted edge closes a real path
    planted.get(b)!.add(a);
    const found = cycles(planted);
    expect(found.some((c) => c.includes(a) && c.includes(b))).toBe(true);
    expect(loopThrough(planted, found.find((c) => c.includes(a))!)).toMatch(/ -> .* -> /);

    const text = [
      "import { a } from '@/server/a';",
      "import type { T } from './t';",
      "import { type U, type V } from './uv';",
      "import { type W, w } from './w';",
      "import './side-effect';",
      "export { x } from '../x';",
      "export type { Y } from './y';",
      "type Z = typeof import('./z');",
      "// import { c } from './comment';",
      "const s = \"import('./string')\";",
      "async function f() { return (await import('./lazy')).g; }",
      "const r = require('./required');",
    ].join('\n');
    expect(valueImports('m.ts', text).sort()).toEqual(
      ['../x', './lazy', './required', './side-effect', './w', '@/server/a'].sort());

    const tiny: Graph = new Map([
      ['m.ts', new Set(['lazy.ts'])],
      ['lazy.ts', new Set(['m.ts'])],
      ['t.ts', new Set()],
    ]);
    expect(cycles(tiny)).toEqual([['lazy.ts', 'm.ts']]);
  });
});
