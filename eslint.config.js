// Type-checked lint with the layer rules of STYLE.md: arrows point one way.
import tseslint from 'typescript-eslint';

const layer = (folder, forbidden) => ({
  files: [`src/${folder}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      { patterns: forbidden.map((f) => ({ group: [`**/${f}/*`, `../${f}/*`], message: `${folder}/ may not import ${f}/ (see STYLE.md layers)` })) },
    ],
  },
});

export default tseslint.config(
  { ignores: ['dist/**', 'dist-check/**', 'node_modules/**', 'bench/**', 'examples/**', 'bin/**', 'test/fixtures/**/*.mjs', 'tmp-probe/**'] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      // abort reasons are propagated as given (AbortSignal.reason may be any value)
      '@typescript-eslint/prefer-promise-reject-errors': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // tests print what they received (String of an unknown value) and match with expect.objectContaining (typed any)
    files: ['test/**/*.ts', 'src/**/*.test.ts'],
    rules: { '@typescript-eslint/no-base-to-string': 'off', '@typescript-eslint/no-unsafe-assignment': 'off' },
  },
  layer('core', ['diagnostics', 'types', 'workflow', 'engine', 'agents', 'api', 'cli', 'server']),
  layer('diagnostics', ['types', 'workflow', 'engine', 'agents', 'api', 'cli', 'server']),
  layer('types', ['workflow', 'engine', 'agents', 'api', 'cli', 'server']),
  layer('workflow', ['engine', 'agents', 'api', 'cli', 'server']),
  layer('engine', ['agents', 'api', 'cli', 'server']),
  layer('agents', ['api', 'cli', 'server']),
  layer('api', ['cli', 'server']),
  layer('server', ['cli']),
);
