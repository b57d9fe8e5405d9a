/**
 * `baton check` for `x-a2a` agents: each agent's card is fetched (with `@a2a-js/sdk`'s resolver,
 * 5 s at most) and checked: the declared `skill` is one the card lists, and the modes (the skill's,
 * else the card's defaults) take and give `application/json` data parts. Findings are diagnostics
 * positioned at the declaration; an unreachable card is a warning, never a crash.
 */
import { error, warning, type Diagnostic } from '../diagnostics/diagnostic.js';
import { didYouMean } from '../core/suggest.js';
import { networkErrorText } from '../core/errors.js';
import type { A2aDecl, WorkflowModel } from '../workflow/model.js';
import { authFetch, cardLocation, LEGACY_COMPAT } from './a2a.js';
import { JSON_MODE, loadA2a, type A2aCard } from './a2a-sdk.js';

export interface CardCheckOptions {
  env?: Readonly<Record<string, string | undefined>>;
  fetch?: typeof fetch;
  timeoutMs?: number;
}

/** The diagnostics of every `x-a2a` agent of a workflow (none when it declares none: the SDK is then not loaded). */
export async function checkA2aAgents(model: WorkflowModel, opts: CardCheckOptions = {}): Promise<Diagnostic[]> {
  const decls = Object.entries(model.agents ?? {}).flatMap(([id, d]) => (d.a2a ? [[id, d.a2a] as const] : []));
  if (decls.length === 0) return [];
  const out = await Promise.all(decls.map(([id, d]) => checkOne(id, d, opts)));
  return out.flat();
}

async function checkOne(id: string, decl: A2aDecl, opts: CardCheckOptions): Promise<Diagnostic[]> {
  const at = ['agents', id, 'x-a2a'];
  let card: A2aCard;
  try {
    card = await fetchCard(decl, opts);
  } catch (e) {
    if (e instanceof Error && e.name === 'BatonError') throw e; // the SDK is missing: the caller says how to install it
    return [warning('a2a-card-unreachable', [...at, 'url'], `cannot read the agent card of \`${id}\` at ${decl.url}: ${networkErrorText(e)}`, { hint: 'is the agent running? `baton check` reads the card at /.well-known/agent-card.json under the URL (or the URL itself when it ends in .json)' })];
  }
  const out: Diagnostic[] = [];
  // a card in protobuf JSON leaves empty lists out (a skill without `inputModes` takes the card's defaults)
  const skills = card.skills ?? [];
  const skill = decl.skill === undefined ? undefined : skills.find((s) => s.id === decl.skill);
  if (decl.skill !== undefined && !skill) {
    const ids = skills.map((s) => s.id);
    const near = didYouMean(decl.skill, ids);
    out.push(error('a2a-unknown-skill', [...at, 'skill'], `the agent card of \`${id}\` (${card.name}) lists no skill \`${decl.skill}\`${near ? `; ${near}` : ''}`, { hint: ids.length > 0 ? `its skills: ${ids.slice(0, 20).join(', ')}` : 'its card lists no skills' }));
  }
  const where = skill ? [...at, 'skill'] : [...at, 'url'];
  const whose = skill ? `skill \`${skill.id}\`` : 'card';
  const inModes = (skill?.inputModes ?? []).length > 0 ? skill!.inputModes : (card.defaultInputModes ?? []);
  const outModes = (skill?.outputModes ?? []).length > 0 ? skill!.outputModes : (card.defaultOutputModes ?? []);
  if (inModes.length > 0 && !inModes.some(takesJson)) out.push(error('a2a-mode-mismatch', where, `\`${id}\`: its ${whose} takes ${inModes.join(', ')}, not ${JSON_MODE}: Baton sends the phase's input as a JSON data part`));
  if (outModes.length > 0 && !outModes.some(takesJson)) {
    const text = outModes.some((m) => mediaType(m) === 'text/plain' || mediaType(m) === 'text');
    const msg = `\`${id}\`: its ${whose} gives ${outModes.join(', ')}, not ${JSON_MODE}: the phase's outputs are read from a JSON data part`;
    out.push(text ? warning('a2a-mode-mismatch', where, `${msg}; its text replies go through the reply extraction LLM replies get`) : error('a2a-mode-mismatch', where, msg));
  }
  return out;
}

/** A mode's media type without its parameters (`application/json; charset=utf-8` is `application/json`), lower case. */
function mediaType(mode: string): string {
  return mode.split(';')[0]!.trim().toLowerCase();
}

/**
 * Whether a mode takes JSON: `application/json` with or without parameters, a `+json` structured
 * suffix (RFC 6839: `application/vnd.acme+json`), a wildcard, or the SDK's names of a data part.
 * (`application/json; charset=utf-8` was refused before: an error on a card that takes JSON.)
 */
function takesJson(mode: string): boolean {
  const m = mediaType(mode);
  return m === JSON_MODE || m.endsWith('+json') || m === 'application/*' || m === '*/*' || m === 'data' || m === 'json';
}

async function fetchCard(decl: A2aDecl, opts: CardCheckOptions): Promise<A2aCard> {
  const { client } = await loadA2a('checking an `x-a2a` agent');
  const env = opts.env ?? process.env;
  const token = decl.tokenEnv !== undefined ? env[decl.tokenEnv] : undefined;
  const base = authFetch(token === '' ? undefined : token, opts.fetch);
  const timeoutMs = opts.timeoutMs ?? 5000;
  const timed: typeof fetch = (input, init) => base(input, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  const { base: url, path } = cardLocation(decl.url);
  const card = await new client.DefaultAgentCardResolver({ fetchImpl: timed, legacyCompat: LEGACY_COMPAT }).resolve(url, path);
  if ((card.skills !== undefined && !Array.isArray(card.skills)) || typeof card.name !== 'string') throw new Error('the answer is not an agent card');
  return card;
}
