/** Hints shared by the checks of several layers (the workflow's shape, the type language). */

/**
 * What to write instead of a value of the wrong JSON type, when one fix is likely: a number or a
 * boolean in quotes (`max_attempts: "3"`, `required: "false"`), a version or a name that YAML read as a
 * number (`version: 1.0`), one name where a list is wanted (`depends_on: research`), an empty value.
 */
export function wrongTypeHint(value: unknown, want: 'string' | 'number' | 'integer' | 'boolean' | 'list' | 'mapping'): string | undefined {
  if (value === null) return 'give it a value after the `:`, or remove the key';
  switch (want) {
    case 'number':
    case 'integer':
      if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return `write the number without quotes: \`${Number(value)}\``;
      if (want === 'integer' && typeof value === 'number' && Number.isFinite(value) && !Number.isInteger(value)) return `a whole number, e.g. \`${Math.round(value)}\``;
      return undefined;
    case 'boolean':
      if (typeof value === 'string' && /^(true|false)$/i.test(value.trim())) return `write \`${value.trim().toLowerCase()}\` without quotes`;
      if (typeof value === 'string' && /^(yes|no|on|off|y|n)$/i.test(value.trim())) return 'write `true` or `false` (YAML 1.2 reads yes, no, on and off as strings)';
      return undefined;
    case 'string':
      // the number as YAML read it may differ from the text (`1.0` is 1): say how, not what
      if (typeof value === 'number') return 'quote it (`"..."`): unquoted, YAML reads it as a number';
      if (typeof value === 'boolean') return `quote it: \`"${String(value)}"\``;
      // `for_each: [a.xs]`: one value in brackets
      if (Array.isArray(value) && value.length === 1 && typeof value[0] === 'string') return `one value, not a list: \`${value[0]}\` without the brackets`;
      return undefined;
    case 'list':
      if (typeof value === 'string' || typeof value === 'number') return `a list, even of one: \`[${String(value)}]\``;
      return undefined;
    case 'mapping':
      if (Array.isArray(value)) return 'write `key: value` lines indented under it, not `- item` lines';
      return undefined;
  }
}
