// Lint: typescript-eslint, React hooks, no import cycles, and the layers of lib/ (ADR 0011):
// kernel ← db ← idempotency ← concerns ← api ← app. `lib/` never imports React or Next.
import js from "@eslint/js";
import { createTypeScriptImportResolver } from "eslint-import-resolver-typescript";
import importX from "eslint-plugin-import-x";
import reactHooks from "eslint-plugin-react-hooks";
import globals from "globals";
import tseslint from "typescript-eslint";

const CONCERNS = [
  "records",
  "stats",
  "retention",
  "reconcile",
  "compensations",
  "views",
  "auth",
  "audit",
  "redis",
  "insights",
  "demo",
  "providers",
  "preferences",
  "http",
];
const FRAMEWORK = [
  { group: ["react", "react-dom", "react/*", "next", "next/*", "next-auth/react"], message: "lib/ is plain TypeScript: no React or Next (ADR 0011)." },
  { group: ["@/app/*", "@/components/*", "**/app/*", "**/components/*"], message: "lib/ does not import the UI." },
];
/** `from` may not import any of `folders` (relative or `@/lib/…`). */
const notFrom = (folders, why) =>
  folders.map((f) => ({ group: [`@/lib/${f}`, `@/lib/${f}/*`, `../${f}`, `../${f}/*`, `../../lib/${f}`, `../../lib/${f}/*`], message: why }));

export default tseslint.config(
  { ignores: ["lib/generated/**", ".next/**", "node_modules/**", "test-results/**", "playwright-report/**", "next-env.d.ts", "tsconfig.tsbuildinfo"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
    plugins: { "import-x": importX },
    settings: { "import-x/resolver-next": [createTypeScriptImportResolver({ project: "tsconfig.json" })] },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" }],
      "@typescript-eslint/no-explicit-any": "error",
      "import-x/no-cycle": ["error", { maxDepth: 8, ignoreExternal: true }],
      "import-x/no-self-import": "error",
      // The console looks for control characters on purpose (NUL is what PostgreSQL cannot store).
      "no-control-regex": "off",
    },
  },
  {
    // The hook rules (the React Compiler's stricter set is not adopted: the UI is not compiled by it).
    files: ["app/**/*.tsx", "components/**/*.tsx"],
    plugins: { "react-hooks": reactHooks },
    rules: { "react-hooks/rules-of-hooks": "error", "react-hooks/exhaustive-deps": "warn" },
  },
  {
    files: ["lib/**/*.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: [...FRAMEWORK, ...notFrom(["api"], "The concerns do not depend on the HTTP layer (lib/api).")] }] },
  },
  {
    files: ["lib/api/**/*.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: FRAMEWORK }] },
  },
  {
    files: ["lib/kernel/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", { patterns: [...FRAMEWORK, ...notFrom(["db", "idempotency", "api", ...CONCERNS], "The kernel depends on nothing.")] }],
    },
  },
  {
    files: ["lib/db/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [...FRAMEWORK, ...notFrom(["idempotency", "api", ...CONCERNS], "The data layer stands on the kernel only.")] },
      ],
    },
  },
  {
    files: ["lib/idempotency/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [...FRAMEWORK, ...notFrom(["api", ...CONCERNS], "The protocol library depends only on the kernel and the data layer.")] },
      ],
    },
  },
  {
    // Tests, scripts and benches drive the code from outside; they may reach any layer.
    // JSON bodies are read loosely there.
    files: ["test/**", "e2e/**", "bench/**", "scripts/**"],
    rules: { "@typescript-eslint/no-non-null-assertion": "off", "@typescript-eslint/no-explicit-any": "off" },
  },
);
