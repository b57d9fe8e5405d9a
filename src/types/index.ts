/** The type language: deep, no coercion. See docs/workflow-format.md#types. */
export { compileTypes, PRIMITIVES } from './registry.js';
export { isJsonValue, typeText } from './compiled.js';
export { parseTypeExpr } from './parse.js';
export type { CompiledType, PathLookup, RecordField, TypeNode, TypeRegistry, ValueIssue } from './api.js';
