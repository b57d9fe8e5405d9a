/** Gate scenarios: run, phase, access and input gates; timeouts and escalation; decisions from another engine; restarts while waiting. */
import { expect } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { BatonError } from '../../../src/core/errors.js';
import { createEngine } from '../../../src/api/engine.js';
import type { AgentContext } from '../../../src/engine/agent.js';
import { AgentError } from '../../../src/engine/agent.js';
import { FAULT_POINTS, type FaultPoint } from '../../../src/engine/worker.js';
import type { Json } from '../../../src/core/json.js';
import { eventsOf, expectReplays, header, settle, until, wf, withClock } from '../helpers.js';
import { ASK, HOUR, LONG_LEASE, RISKY, SetClock, type StoreFactory, engineOn, gateOf, statusOf, untilEventType, untilStatus } from './common.js';

/** when true after `a` settles: nothing new starts; a stranger is refused; an approver lets claims resume. */
export async function runGateApprove(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(1000);
  const ran: string[] = [];
  const e = engineOn(store, clock, { x: (ctx) => (ran.push(ctx.phase), ctx.phase === 'a' ? { risk: 9 } : {}), y: (ctx) => (ran.push(ctx.phase), {}) });
  const id = await e.create(RISKY());
  const p = e.drive(id, undefined);
  await untilStatus(store, id, 'waiting');
  expect(ran).not.toContain('b');
  expect(await gateOf(e, id, 'approval')).toMatchObject({ kind: 'run', status: 'open', approvers: ['alice'] });
  await expect(e.approve(id, 'approval', 'mallory')).rejects.toMatchObject({ code: 'gate-refused' });
  expect(await gateOf(e, id, 'approval')).toMatchObject({ status: 'open' });
  expect(ran).not.toContain('b');
  await e.approve(id, 'approval', 'alice', 'looks fine');
  const r = await p;
  expect(r.status).toBe('completed');
  expect(ran.filter((n) => n === 'b')).toHaveLength(1);
  expect(r.gates).toEqual([expect.objectContaining({ id: 'approval', status: 'approved', decided_by: 'alice', comment: 'looks fine', auto: false })]);
  const decided = r.events.findIndex((x) => x.type === 'gate.decided');
  const claimB = r.events.findIndex((x) => x.type === 'task.claimed' && x.phase === 'b');
  expect(claimB).toBeGreaterThan(decided);
  expect(eventsOf(r.events, 'gate.refused')).toEqual([expect.objectContaining({ gate_id: 'approval', by: 'mallory' })]);
  await expectReplays(store, r);
  await e.close();
}

/** when false: no gate at all. */
export async function runGateFalse(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const e = engineOn(store, new ManualClock(0), { x: (ctx) => (ctx.phase === 'a' ? { risk: 1 } : {}), y: () => ({}) });
  const r = await e.run(RISKY());
  expect(r.status).toBe('completed');
  expect(r.gates).toEqual([]);
  await e.close();
}

/** A condition on the trigger only is evaluated at start, before any claim; deny fails the run. */
export async function runGateAtStartDeny(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const model = wf(`${header(`governance:
  require_approval: {when: "trigger.amount > 100"}`)}workflow:
  a: {assign: x}
  b: {assign: x, depends_on: [a]}`);
  let calls = 0;
  const e = engineOn(store, clock, { x: () => (calls++, {}) });
  const id = await e.create(model, { trigger: { amount: 500 } });
  const first = await store.events(id);
  expect(first.map((x) => x.type)).toContain('gate.opened');
  const p = e.drive(id, undefined);
  await untilStatus(store, id, 'waiting');
  await settle();
  expect(calls).toBe(0);
  expect(eventsOf(await store.events(id), 'task.claimed')).toEqual([]);
  await e.deny(id, 'approval', 'bob');
  const r = await p;
  expect(r.status).toBe('failed');
  expect(r.error).toMatchObject({ code: 'ApprovalDenied', details: { gate_id: 'approval', by: 'bob' } });
  expect(r.phases['a']!.status).toBe('cancelled');
  expect(r.phases['b']!.status).toBe('cancelled');
  expect(calls).toBe(0);
  await expectReplays(store, r);
  // the same trigger under the threshold: no gate
  const small = await e.run(model, { trigger: { amount: 5 } });
  expect(small.status).toBe('completed');
  expect(small.gates).toEqual([]);
  await e.close();
}

/** The condition names a phase that was skipped or failed: approval is required (fail-closed). */
export async function runGateFailClosed(makeStore: StoreFactory): Promise<void> {
  for (const how of ['skipped', 'failed'] as const) {
    const store = await makeStore();
    const model = RISKY('', how === 'skipped' ? ', skip_when: "true"' : ', retry: {max_attempts: 1}');
    const ran: string[] = [];
    const e = engineOn(store, new ManualClock(0), {
      x: (ctx) => {
        ran.push(ctx.phase);
        if (ctx.phase === 'a') throw new AgentError('Broken', 'no risk today', {}, false);
        return {};
      },
      y: () => ({}),
    });
    const id = await e.create(model);
    const p = e.drive(id, undefined);
    await until(async () => (await store.events(id)).some((x) => x.type === 'gate.opened'), 'the gate');
    const g = await gateOf(e, id, 'approval');
    expect(g, how).toMatchObject({ kind: 'run', status: 'open' });
    expect(g!.reason).toMatch(/fail-closed/);
    await e.approve(id, 'approval', 'alice');
    const r = await p;
    expect(r.phases['a']!.status).toBe(how);
    // b depends on a: skipped upstream is fine for b (no inputs), a failed upstream fails it
    expect(r.status).toBe(how === 'skipped' ? 'completed' : 'failed');
    await expectReplays(store, r);
    await e.close();
  }
}

// ---- phase gate ---------------------------------------------------------------------------------

export const PUBLISH = wf(`${header()}workflow:
  draft: {assign: w, outputs: {text: string}}
  publish:
    assign: p
    depends_on: [draft]
    inputs: {text: draft.text}
    x-require_approval: {approvers: [editor]}
  announce: {assign: w, depends_on: [publish]}
  unrelated: {assign: w, x-require_approval: {when: "trigger.careful"}}`);

export async function phaseGateApproveDeny(makeStore: StoreFactory): Promise<void> {
  for (const decision of ['approved', 'denied'] as const) {
    const store = await makeStore();
    let published = 0;
    const e = engineOn(store, new ManualClock(0), { w: () => ({ text: 't' }), p: () => (published++, {}) });
    const id = await e.create(PUBLISH, { trigger: { careful: false } });
    const p = e.drive(id, undefined);
    await untilStatus(store, id, 'waiting');
    const ins = await e.inspect(id);
    expect(ins.result.phases['publish']!.status).toBe('awaiting_approval');
    expect(ins.result.phases['draft']!.status).toBe('completed');
    expect(ins.result.phases['unrelated']!.status).toBe('completed'); // its `when` was false: no gate
    expect(ins.result.gates.map((g) => g.id)).toEqual(['approve-publish']);
    expect((await store.tasks(id)).find((t) => t.phase === 'publish')!.status).toBe('awaiting_approval');
    expect(published).toBe(0);
    await expect(e.approve(id, 'approve-publish', 'intern')).rejects.toMatchObject({ code: 'gate-refused' });
    await expect(e.approve(id, 'approve-nothing', 'editor')).rejects.toMatchObject({ code: 'unknown-gate' });
    if (decision === 'approved') await e.approve(id, 'approve-publish', 'editor');
    else await e.deny(id, 'approve-publish', 'editor', 'not yet');
    const r = await p;
    if (decision === 'approved') {
      expect(r.status).toBe('completed');
      expect(published).toBe(1);
      expect(r.phases['announce']!.status).toBe('completed');
    } else {
      expect(r.status).toBe('failed');
      expect(published).toBe(0);
      expect(r.phases['publish']).toMatchObject({ status: 'failed', error: { code: 'ApprovalDenied' } });
      expect(r.phases['announce']).toMatchObject({ status: 'failed', error: { code: 'UpstreamFailed' } });
      expect(r.error?.code).toBe('ApprovalDenied');
    }
    // a decided gate cannot be decided again
    await expect(e.approve(id, 'approve-publish', 'editor')).rejects.toMatchObject({ code: 'gate-refused' });
    await expectReplays(store, r);
    await e.close();
  }
}

// ---- access gate --------------------------------------------------------------------------------

export const ACCESS = (onRequest: string) =>
  wf(`${header(`agents:
  vault: {approval_required: true}
  plain: {}
governance:
  access_review: {on_request: ${onRequest}, approvers: [sec]}`)}workflow:
  a: {assign: plain}
  b: {assign: vault, depends_on: [a]}
  c: {assign: vault, depends_on: [a]}
  d: {assign: plain, depends_on: [b]}`);

export async function accessGates(makeStore: StoreFactory): Promise<void> {
  // approve: granted at once, recorded
  {
    const store = await makeStore();
    const e = engineOn(store, new ManualClock(0), { vault: () => ({}), plain: () => ({}) });
    const r = await e.run(ACCESS('approve'));
    expect(r.status).toBe('completed');
    expect(r.gates).toEqual([expect.objectContaining({ id: 'access-vault', kind: 'access', status: 'approved', decided_by: 'access_review', auto: true })]);
    await expectReplays(store, r);
    await e.close();
  }
  // deny: every phase of the agent fails AccessDenied, the agent never runs
  {
    const store = await makeStore();
    let vault = 0;
    const e = engineOn(store, new ManualClock(0), { vault: () => (vault++, {}), plain: () => ({}) });
    const r = await e.run(ACCESS('deny'));
    expect(r.status).toBe('failed');
    expect(vault).toBe(0);
    expect(r.phases['b']).toMatchObject({ status: 'failed', error: { code: 'AccessDenied' } });
    expect(r.phases['c']).toMatchObject({ status: 'failed', error: { code: 'AccessDenied' } });
    expect(r.phases['d']).toMatchObject({ status: 'failed', error: { code: 'UpstreamFailed' } });
    await expectReplays(store, r);
    await e.close();
  }
  // defer: waits for an approver; a stranger is refused; deny after defer fails the agent's phases
  for (const decision of ['approved', 'denied'] as const) {
    const store = await makeStore();
    let vault = 0;
    const e = engineOn(store, new ManualClock(0), { vault: () => (vault++, {}), plain: () => ({}) });
    const id = await e.create(ACCESS('defer'));
    const p = e.drive(id, undefined);
    await until(async () => (await store.events(id)).some((x) => x.type === 'gate.opened'), 'access gate');
    await settle();
    expect(vault).toBe(0);
    expect(await gateOf(e, id, 'access-vault')).toMatchObject({ kind: 'access', status: 'open', approvers: ['sec'], agent: 'vault' });
    expect(await statusOf(store, id)).toBe('waiting');
    await expect(e.approve(id, 'access-vault', 'bob')).rejects.toMatchObject({ code: 'gate-refused' });
    if (decision === 'approved') await e.approve(id, 'access-vault', 'sec');
    else await e.deny(id, 'access-vault', 'sec');
    const r = await p;
    if (decision === 'approved') {
      expect(r.status).toBe('completed');
      expect(vault).toBe(2);
    } else {
      expect(r.status).toBe('failed');
      expect(vault).toBe(0);
      expect(r.phases['b']).toMatchObject({ status: 'failed', error: { code: 'AccessDenied' } });
      expect(r.phases['c']).toMatchObject({ status: 'failed', error: { code: 'AccessDenied' } });
    }
    expect(r.gates.filter((g) => g.kind === 'access')).toHaveLength(1);
    await expectReplays(store, r);
    await e.close();
  }
}

// ---- timeouts and escalation ----------------------------------------------------------------------

export async function gateTimeouts(makeStore: StoreFactory): Promise<void> {
  const model = (onTimeout: string) =>
    wf(`${header(`governance:
  require_approval: {approvers: [alice], timeout_hours: 2, on_timeout: ${onTimeout}}
  escalation: {contact: "ops@example.com"}`)}workflow:
  a: {assign: x}`);
  // proceed: approved automatically at the expiry
  {
    const store = await makeStore();
    const clock = new ManualClock(0);
    const e = engineOn(store, clock, { x: () => ({}) });
    const r = await withClock(clock, e.run(model('proceed')));
    expect(r.status).toBe('completed');
    expect(clock.now()).toBe(2 * HOUR);
    expect(r.gates[0]).toMatchObject({ status: 'approved', decided_by: 'timeout', auto: true });
    expect(eventsOf(r.events, 'gate.expired')).toEqual([expect.objectContaining({ gate_id: 'approval', action: 'proceed', at: 2 * HOUR })]);
    await expectReplays(store, r);
    await e.close();
  }
  // abort: the run fails at the expiry
  {
    const store = await makeStore();
    const clock = new ManualClock(0);
    let calls = 0;
    const e = engineOn(store, clock, { x: () => (calls++, {}) });
    const r = await withClock(clock, e.run(model('abort')));
    expect(r.status).toBe('failed');
    expect(r.error).toMatchObject({ code: 'ApprovalTimeout' });
    expect(clock.now()).toBe(2 * HOUR);
    expect(calls).toBe(0);
    await expectReplays(store, r);
    await e.close();
  }
  // escalate: an event naming the contact, and the gate keeps waiting (no expiry any more)
  {
    const store = await makeStore();
    const clock = new ManualClock(0);
    const e = engineOn(store, clock, { x: () => ({}) });
    const id = await e.create(model('escalate'));
    const p = e.drive(id, undefined);
    await untilStatus(store, id, 'waiting');
    await clock.advance(2 * HOUR - 1);
    await settle();
    expect(eventsOf(await store.events(id), 'gate.escalated')).toEqual([]);
    await clock.advance(1);
    await untilEventType(store, id, 'gate.escalated');
    const esc = eventsOf(await store.events(id), 'gate.escalated');
    expect(esc).toEqual([expect.objectContaining({ gate_id: 'approval', contact: 'ops@example.com', waited_ms: 2 * HOUR })]);
    await clock.advance(10 * HOUR);
    await settle();
    expect(await statusOf(store, id)).toBe('waiting');
    expect(eventsOf(await store.events(id), 'gate.escalated')).toHaveLength(1);
    await e.approve(id, 'approval', 'alice');
    const r = await p;
    expect(r.status).toBe('completed');
    await expectReplays(store, r);
    await e.close();
  }
}

/** escalation.after_hours raises gate.escalated for any gate left waiting that long, once. */
export async function escalationAfterHours(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const model = wf(`${header(`governance:
  escalation: {contact: "boss@example.com", after_hours: 1}`)}workflow:
  a: {assign: x, x-require_approval: true}
  b: {assign: y}`);
  const e = engineOn(store, clock, {
    x: () => ({}),
    y: async (ctx) => ({ v: await ctx.requestInput({ question: 'which?' }) }),
  });
  const id = await e.create(model);
  const p = e.drive(id, undefined);
  await untilStatus(store, id, 'waiting');
  await clock.advance(HOUR);
  await until(async () => eventsOf(await store.events(id), 'gate.escalated').length === 2, 'two escalations');
  const esc = eventsOf(await store.events(id), 'gate.escalated');
  expect(esc.map((x) => x.gate_id).sort()).toEqual(['approve-a', 'input-b-1']);
  expect(esc.every((x) => x.contact === 'boss@example.com' && x.waited_ms === HOUR)).toBe(true);
  await clock.advance(5 * HOUR);
  await settle();
  expect(eventsOf(await store.events(id), 'gate.escalated')).toHaveLength(2);
  await e.approve(id, 'approve-a', 'anyone');
  await e.respond(id, 'input-b-1', 'this', 'anyone');
  const r = await p;
  expect(r.status).toBe('completed');
  expect(r.phases['b']!.output).toEqual({ v: 'this' });
  await expectReplays(store, r);
  await e.close();
}

/** --auto-approve: every approval gate is approved as it opens, recorded as automatic. */
export async function autoApprove(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const model = wf(`${header(`agents:
  v: {approval_required: true}
governance:
  require_approval: {approvers: [alice]}
  access_review: {on_request: defer, approvers: [sec]}`)}workflow:
  a: {assign: v, x-require_approval: {approvers: [ed]}}`);
  const e = engineOn(store, new ManualClock(0), { v: () => ({}) });
  const r = await e.run(model, { autoApprove: true });
  expect(r.status).toBe('completed');
  expect(r.gates.map((g) => [g.id, g.status, g.decided_by, g.auto])).toEqual([
    ['approval', 'approved', 'auto-approve', true],
    ['approve-a', 'approved', 'auto-approve', true],
    ['access-v', 'approved', 'auto-approve', true],
  ]);
  await expectReplays(store, r);
  await e.close();
}

export async function inputGateChoices(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  let got: Json | undefined;
  const e = engineOn(store, clock, {
    asker: async (ctx) => {
      got = await ctx.requestInput({ question: 'ship it?', choices: ['yes', 'no'] });
      return { answer: got };
    },
    plain: () => ({}),
  });
  const id = await e.create(ASK);
  const p = e.drive(id, undefined);
  await untilStatus(store, id, 'waiting');
  const ins = await e.inspect(id);
  expect(ins.result.suspended_phases).toEqual([{ phase_name: 'ask', intent_id: ins.result.phases['ask']!.task_id, suspended_since: new Date(0).toISOString(), expires_at: null }]);
  expect(ins.result.phases['ask']!.status).toBe('suspended_awaiting_input');
  expect(ins.result.phases['side']!.status).toBe('completed');
  expect(ins.result.gates).toEqual([expect.objectContaining({ id: 'input-ask-1', kind: 'input', status: 'open', question: 'ship it?', choices: ['yes', 'no'] })]);
  const rej = eventsOf(ins.result.events, 'task.claim_rejected');
  expect(rej).toEqual([expect.objectContaining({ phase: 'after', error: expect.objectContaining({ error: 'UpstreamIntentSuspendedError', suspended_intent_id: ins.result.phases['ask']!.task_id }) })]);
  await expect(e.respond(id, 'input-ask-1', 'maybe', 'carol')).rejects.toMatchObject({ code: 'gate-refused' });
  await expect(e.approve(id, 'input-ask-1', 'carol')).rejects.toMatchObject({ code: 'gate-refused' });
  expect(await gateOf(e, id, 'input-ask-1')).toMatchObject({ status: 'open' });
  expect(eventsOf(await store.events(id), 'gate.refused')).toEqual([expect.objectContaining({ gate_id: 'input-ask-1', by: 'carol', reason: expect.stringContaining('maybe') })]);
  await e.respond(id, 'input-ask-1', 'yes', 'carol');
  const r = await p;
  expect(r.status).toBe('completed');
  expect(got).toBe('yes');
  expect(r.phases['ask']).toMatchObject({ status: 'completed', attempts: 1, output: { answer: 'yes' } });
  expect(r.suspended_phases).toEqual([]);
  expect(r.gates[0]).toMatchObject({ status: 'answered', value: 'yes', decided_by: 'carol' });
  expect(eventsOf(r.events, 'task.resumed')).toHaveLength(1);
  await expect(e.respond(id, 'input-ask-1', 'no', 'carol')).rejects.toMatchObject({ code: 'gate-refused' });
  await expectReplays(store, r);
  await e.close();
}

export async function inputGateSchemaAndTimeout(makeStore: StoreFactory): Promise<void> {
  {
    const store = await makeStore();
    const e = engineOn(store, new ManualClock(0), {
      asker: async (ctx) => ({ answer: await ctx.requestInput({ question: 'how many?', schema: { type: 'object', required: ['n'], properties: { n: { type: 'integer', minimum: 1 } } } }) }),
      plain: () => ({}),
    });
    const id = await e.create(ASK);
    const p = e.drive(id, undefined);
    await untilStatus(store, id, 'waiting');
    for (const bad of [{ n: 'x' }, { n: 0 }, {}, 'n', null] as Json[]) await expect(e.respond(id, 'input-ask-1', bad, 'u')).rejects.toMatchObject({ code: 'gate-refused' });
    expect(eventsOf(await store.events(id), 'gate.refused')).toHaveLength(5);
    expect(await gateOf(e, id, 'input-ask-1')).toMatchObject({ status: 'open' });
    await e.respond(id, 'input-ask-1', { n: 3 }, 'u');
    const r = await p;
    expect(r.phases['ask']!.output).toEqual({ answer: { n: 3 } });
    await expectReplays(store, r);
    await e.close();
  }
  // no answer within timeoutMs: InputTimeout, under the retry policy (max_attempts 1: the phase fails)
  {
    const store = await makeStore();
    const clock = new ManualClock(0);
    const e = engineOn(store, clock, {
      asker: async (ctx) => ({ answer: await ctx.requestInput({ question: 'quick?', timeoutMs: 60_000 }) }),
      plain: () => ({}),
    });
    const r = await withClock(clock, e.run(ASK));
    expect(r.status).toBe('failed');
    expect(r.phases['ask']).toMatchObject({ status: 'failed', error: { code: 'InputTimeout' } });
    expect(r.phases['after']).toMatchObject({ status: 'failed', error: { code: 'UpstreamFailed' } });
    expect(clock.now()).toBe(60_000);
    expect(r.gates[0]).toMatchObject({ id: 'input-ask-1', status: 'closed' }); // the run ended: nobody can answer it now
    await expectReplays(store, r);
    await e.close();
  }
}

/** Engine A drives until the gate opens and goes away; engine B decides and resumes: the run completes. */
export async function resumeAfterRestartApproval(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const calls: string[] = [];
  const agents = { x: (ctx: AgentContext) => (calls.push(ctx.phase), ctx.phase === 'a' ? { risk: 9 } : {}), y: (ctx: AgentContext) => (calls.push(ctx.phase), {}) };
  const a = engineOn(store, clock, agents, { workerId: 'A' });
  const id = await a.create(RISKY());
  const pa = a.drive(id, undefined);
  await untilStatus(store, id, 'waiting');
  await a.close();
  await expect(pa).rejects.toBeDefined();
  const b = engineOn(store, clock, agents, { workerId: 'B', isOwnerDead: (o) => o === 'A' });
  await b.approve(id, 'approval', 'alice');
  const r = await b.resume(id);
  expect(r.status).toBe('completed');
  expect(calls.sort()).toEqual(['a', 'b', 'c', 'd']);
  await expectReplays(store, r);
  await b.close();
}

/** The process that asked is gone: a new attempt gets ctx.inputResponse, and asking again returns the answer with no new gate. */
/** The store calls that write (a dead process makes none of them). */
const WRITES = new Set(['transact', 'commitMany', 'saveSnapshot', 'renewLeases', 'createRun', 'createRuns']);

export async function resumeAfterRestartInput(makeStore: StoreFactory): Promise<void> {
  for (const how of ['dead-owner', 'grace-expired'] as const) {
    const store = await makeStore();
    const clock = new ManualClock(0);
    const seen: { attempt: number; inputResponse: Json | undefined; answer?: Json; key: string }[] = [];
    const asker = async (ctx: AgentContext) => {
      const s: (typeof seen)[number] = { attempt: ctx.attempt, inputResponse: ctx.inputResponse, key: ctx.idempotencyKey };
      seen.push(s);
      s.answer = await ctx.requestInput({ question: 'colour?', choices: ['red', 'blue'] });
      return { answer: s.answer };
    };
    const agents = { asker, plain: () => ({}) };
    // A's process dies while its attempt waits (a crash: nothing more of it reaches the store, so it hands nothing back)
    let dead = false;
    const died = new Proxy(store, {
      get(target, prop, receiver) {
        const v: unknown = Reflect.get(target, prop, receiver);
        if (typeof v !== 'function' || !WRITES.has(String(prop))) return v;
        return (...args: unknown[]) => (dead ? Promise.reject(new BatonError('fault-injected', 'the process died')) : (v as (...a: unknown[]) => unknown).apply(target, args));
      },
    });
    const a = engineOn(died, clock, agents, { workerId: 'A', isOwnerDead: () => false });
    const id = await a.create(ASK);
    const pa = a.drive(id, undefined);
    await untilStatus(store, id, 'waiting');
    dead = true;
    await a.close();
    await expect(pa).rejects.toBeDefined();
    expect((await store.events(id)).filter((e) => e.type === 'task.lease_expired')).toEqual([]);
    // the answer comes from a process that knows A is gone (same host), or knows nothing of it
    const b = engineOn(store, clock, agents, { workerId: 'B', isOwnerDead: how === 'dead-owner' ? (o) => o === 'A' : () => false });
    await b.respond(id, 'input-ask-1', 'blue', 'dave');
    const r = await withClock(clock, b.resume(id));
    expect(r.status, how).toBe('completed');
    expect(seen).toHaveLength(2);
    expect(seen[0]).toMatchObject({ attempt: 1, inputResponse: undefined });
    expect(seen[1]).toMatchObject({ attempt: 2, inputResponse: 'blue', answer: 'blue', key: seen[0]!.key });
    expect(r.phases['ask']).toMatchObject({ status: 'completed', attempts: 2, output: { answer: 'blue' } });
    expect(r.gates.filter((g) => g.kind === 'input')).toHaveLength(1);
    // a known-dead asker is replaced at once; otherwise after its grace period
    if (how === 'grace-expired') expect(r.ended_at).toBeGreaterThanOrEqual(30_000);
    else expect(r.ended_at).toBeLessThan(30_000);
    await expectReplays(store, r);
    await b.close();
  }
}

/** A decision from "another terminal" (a second engine on the same store) reaches the engine that drives. */
export async function approveFromAnotherEngine(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const calls: string[] = [];
  const agents = { x: (ctx: AgentContext) => (calls.push(ctx.phase), ctx.phase === 'a' ? { risk: 9 } : {}), y: (ctx: AgentContext) => (calls.push(ctx.phase), {}) };
  const a = engineOn(store, clock, agents, { workerId: 'A', pollMs: 10 });
  const id = await a.create(RISKY());
  const pa = a.drive(id, undefined);
  await untilStatus(store, id, 'waiting');
  const other = engineOn(store, clock, {}, { workerId: 'T' });
  await expect(other.approve(id, 'approval', 'mallory')).rejects.toMatchObject({ code: 'gate-refused' });
  await other.approve(id, 'approval', 'alice');
  // the clock moves: the driver's claim may have found the run held by the other engine's command, and
  // backs off for a few (clock) milliseconds
  const r = await withClock(clock, pa);
  expect(r.status).toBe('completed');
  expect(calls.sort()).toEqual(['a', 'b', 'c', 'd']);
  expect(r.events.map((x) => x.seq)).toEqual(r.events.map((_, i) => i + 1));
  await expectReplays(store, r);
  await a.close();
  await other.close();
}

export const GATE_SCENARIOS = {
  runGateApprove,
  runGateFalse,
  runGateAtStartDeny,
  runGateFailClosed,
  phaseGateApproveDeny,
  accessGates,
  gateTimeouts,
  escalationAfterHours,
  autoApprove,
  inputGateChoices,
  inputGateSchemaAndTimeout,
  resumeAfterRestartApproval,
  resumeAfterRestartInput,
  approveFromAnotherEngine,
};

export { FAULT_POINTS, type FaultPoint };

/** Two questions in one attempt; after a restart the new attempt gets both answers back in order, no new gate. */
export async function twoQuestionsAcrossARestart(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const asked: string[] = [];
  const asker = async (ctx: AgentContext) => {
    const first = await ctx.requestInput({ question: 'first?' });
    asked.push(`${ctx.attempt}:first=${JSON.stringify(first)}`);
    const second = await ctx.requestInput({ question: 'second?' });
    asked.push(`${ctx.attempt}:second=${JSON.stringify(second)}`);
    return { answer: [first, second] };
  };
  const a = engineOn(store, clock, { asker, plain: () => ({}) }, { workerId: 'A' });
  const id = await a.create(ASK);
  const pa = a.drive(id, undefined);
  await untilStatus(store, id, 'waiting');
  await a.respond(id, 'input-ask-1', 1, 'u');
  await until(async () => (await a.inspect(id)).result.gates.length === 2, 'the second question');
  await untilStatus(store, id, 'waiting');
  await a.close();
  await expect(pa).rejects.toBeDefined();
  const b = engineOn(store, clock, { asker, plain: () => ({}) }, { workerId: 'B', isOwnerDead: (o) => o === 'A' });
  await b.respond(id, 'input-ask-2', 2, 'u');
  const r = await withClock(clock, b.resume(id));
  expect(r.status).toBe('completed');
  expect(asked).toEqual(['1:first=1', '2:first=1', '2:second=2']);
  expect(r.phases['ask']).toMatchObject({ attempts: 2, output: { answer: [1, 2] } });
  expect(r.gates.map((g) => [g.id, g.status])).toEqual([
    ['input-ask-1', 'answered'],
    ['input-ask-2', 'answered'],
  ]);
  await expectReplays(store, r);
  await b.close();
}

/** Phase and access gates time out too: a phase gate with abort fails the run; an access gate denies. */
export async function phaseAndAccessGateTimeouts(makeStore: StoreFactory): Promise<void> {
  {
    const store = await makeStore();
    const clock = new ManualClock(0);
    const model = wf(`${header()}workflow:
  a: {assign: x, x-require_approval: {approvers: [ed], timeout_hours: 1, on_timeout: abort}}
  b: {assign: x}`);
    const e = engineOn(store, clock, { x: () => ({}) });
    const r = await withClock(clock, e.run(model));
    expect(r.status).toBe('failed');
    expect(r.error).toMatchObject({ code: 'ApprovalTimeout', details: { gate_id: 'approve-a' } });
    expect(r.phases['b']!.status).toBe('completed');
    expect(clock.now()).toBe(HOUR);
    await expectReplays(store, r);
    await e.close();
  }
  {
    const store = await makeStore();
    const clock = new ManualClock(0);
    const e = engineOn(store, clock, { vault: () => ({}), plain: () => ({}) });
    const model = wf(`${header(`agents:
  vault: {approval_required: true}
governance:
  access_review: {on_request: defer, approvers: [sec], timeout_hours: 2}`)}workflow:
  a: {assign: plain}
  b: {assign: vault, depends_on: [a]}`);
    const r = await withClock(clock, e.run(model));
    expect(r.status).toBe('failed');
    expect(r.phases['b']).toMatchObject({ status: 'failed', error: { code: 'AccessDenied' } });
    expect(r.gates[0]).toMatchObject({ id: 'access-vault', status: 'denied', decided_by: 'timeout', auto: true });
    expect(clock.now()).toBe(2 * HOUR);
    await expectReplays(store, r);
    await e.close();
  }
}

export const MORE_GATE_SCENARIOS = { returnWithoutAwaitingTheAnswer, commandsAfterClose, inputTimeoutThenRetryAndRestart, twoQuestionsAcrossARestart, phaseAndAccessGateTimeouts, phaseTimeoutPausedWhileWaiting, commandBesideADueTimer, commandFromAnotherEngineBesideADueTimer, answersAreCopies, initialStateIsACopy, answersMustBeJson };

/** The phase timeout counts the agent's time, not the time a human takes to answer; it still applies after the answer. */
export async function phaseTimeoutPausedWhileWaiting(makeStore: StoreFactory): Promise<void> {
  const model = wf(`${header()}workflow:
  a: {assign: x, x-timeout_ms: 1000}`);
  for (const hangAfter of [false, true]) {
    const store = await makeStore();
    const clock = new ManualClock(0);
    const e = engineOn(store, clock, {
      x: async (ctx) => {
        const v = await ctx.requestInput({ question: 'q' });
        if (hangAfter) await new Promise(() => undefined);
        return { v };
      },
    });
    const id = await e.create(model);
    const p = e.drive(id, undefined);
    await untilStatus(store, id, 'waiting');
    await clock.advance(5000);
    await settle();
    expect((await e.inspect(id)).result.phases['a']!.status).toBe('suspended_awaiting_input');
    await e.respond(id, 'input-a-1', 'ok', 'u');
    const r = await withClock(clock, p);
    expect(eventsOf(r.events, 'task.stale_outcome')).toEqual([]);
    if (!hangAfter) {
      expect(r.status).toBe('completed');
      expect(r.phases['a']).toMatchObject({ attempts: 1, output: { v: 'ok' } });
    } else {
      expect(r.phases['a']).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'Timeout' } });
      expect(clock.now()).toBe(5000 + 1000);
    }
    await expectReplays(store, r);
    await e.close();
  }
}

/** A gate command committed together with a timer that fell due gets its own result, not the timer's. */
export async function commandBesideADueTimer(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new SetClock();
  const model = wf(`${header(`governance:
  require_approval: {approvers: [alice]}
  escalation: {contact: ops, after_hours: 1}`)}workflow:
  a: {assign: x}`);
  const e = createEngine({ store, clock, leaseMs: LONG_LEASE, agents: { x: () => ({}) } });
  const id = await e.create(model);
  const p = e.drive(id, undefined);
  await untilStatus(store, id, 'waiting');
  clock.t = HOUR + 1; // the escalation is due; the worker has not looked yet
  await expect(e.approve(id, 'approval', 'mallory')).rejects.toMatchObject({ code: 'gate-refused' });
  expect(eventsOf(await store.events(id), 'gate.escalated')).toHaveLength(1);
  clock.t = 2 * HOUR;
  await e.approve(id, 'approval', 'alice');
  const r = await p;
  expect(r.status).toBe('completed');
  await e.close();
}

/** The same from another engine (another process: `baton approve`): its command's transaction decides the due timer first. */
export async function commandFromAnotherEngineBesideADueTimer(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new SetClock();
  const model = wf(`${header(`governance:
  require_approval: {approvers: [alice]}
  escalation: {contact: ops, after_hours: 1}`)}workflow:
  a: {assign: x}`);
  const e = createEngine({ store, clock, leaseMs: LONG_LEASE, agents: { x: () => ({}) } });
  const id = await e.create(model);
  const p = e.drive(id, undefined).catch((err: unknown) => err);
  await untilStatus(store, id, 'waiting');
  // no worker at all now: only the command's own transaction can see that the escalation is due
  await e.close();
  await p;
  const other = createEngine({ store, clock, agents: {} });
  clock.t = HOUR + 1;
  await expect(other.approve(id, 'approval', 'mallory')).rejects.toMatchObject({ code: 'gate-refused' });
  expect(eventsOf(await store.events(id), 'gate.escalated')).toHaveLength(1);
  clock.t = 2 * HOUR;
  await other.approve(id, 'approval', 'alice');
  await other.close();
  const again = createEngine({ store, clock, leaseMs: LONG_LEASE, agents: { x: () => ({}) } });
  const r = await again.drive(id, undefined);
  expect(r.status).toBe('completed');
  expect(eventsOf(r.events, 'gate.escalated')).toHaveLength(1);
  await again.close();
}

/** An agent that mutates the answer it was given (in the same process, or as ctx.inputResponse) cannot change what was recorded. */
export async function answersAreCopies(makeStore: StoreFactory): Promise<void> {
  for (const restart of [false, true]) {
    const store = await makeStore();
    const clock = new ManualClock(0);
    const asker = async (ctx: AgentContext) => {
      if (ctx.inputResponse !== undefined) ((ctx.inputResponse as { list: number[] }).list).push(99);
      const v = (await ctx.requestInput({ question: 'list?' })) as { list: number[] };
      v.list.push(2);
      return { answer: v };
    };
    const a = engineOn(store, clock, { asker, plain: () => ({}) }, { workerId: 'A' });
    const id = await a.create(ASK);
    const pa = a.drive(id, undefined);
    await untilStatus(store, id, 'waiting');
    let r;
    if (!restart) {
      await a.respond(id, 'input-ask-1', { list: [1] }, 'u');
      r = await pa;
    } else {
      await a.close();
      await expect(pa).rejects.toBeDefined();
      const b = engineOn(store, clock, { asker, plain: () => ({}) }, { workerId: 'B', isOwnerDead: (o) => o === 'A' });
      await b.respond(id, 'input-ask-1', { list: [1] }, 'u');
      r = await b.resume(id);
      await b.close();
    }
    expect(r.status).toBe('completed');
    expect(r.gates[0]!.value).toEqual({ list: [1] });
    expect(r.phases['ask']!.output).toEqual({ answer: { list: [1, 2] } });
    expect(eventsOf(await store.events(id), 'gate.answered')[0]!.value).toEqual({ list: [1] });
    await expectReplays(store, r);
    await a.close();
  }
}

/** An agent that mutates ctx.initialState changes neither the workflow nor later phases or runs. */
export async function initialStateIsACopy(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const model = wf(`${header()}workflow:
  a: {assign: x, initial_state: {cfg: {n: 1}}}
  b: {assign: y, depends_on: [a], initial_state: {cfg: {n: 1}}, inputs: {n: $initial_state.cfg.n}}`);
  const seen: unknown[] = [];
  const e = engineOn(store, new ManualClock(0), {
    x: (ctx) => {
      seen.push(JSON.stringify(ctx.initialState));
      (ctx.initialState['cfg'] as { n: number }).n = 666;
      return {};
    },
    y: (ctx) => (seen.push(ctx.input['n']), {}),
  });
  for (let i = 0; i < 2; i++) {
    const r = await e.run(model);
    expect(r.status).toBe('completed');
  }
  expect(seen).toEqual(['{"cfg":{"n":1}}', 1, '{"cfg":{"n":1}}', 1]);
  await e.close();
}

/** An answer that is not JSON (a library caller may pass anything) is refused; undefined members are dropped as JSON drops them. */
export async function answersMustBeJson(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const e = engineOn(store, new ManualClock(0), { asker: async (ctx) => ({ answer: await ctx.requestInput({ question: 'q' }) }), plain: () => ({}) });
  const id = await e.create(ASK);
  const p = e.drive(id, undefined);
  await untilStatus(store, id, 'waiting');
  for (const bad of [undefined, () => 1, NaN, { n: Infinity }, 10n] as unknown[]) {
    await expect(e.respond(id, 'input-ask-1', bad as Json, 'u')).rejects.toMatchObject({ code: 'gate-refused' });
  }
  await e.respond(id, 'input-ask-1', { a: undefined, b: 1 } as unknown as Json, 'u');
  const r = await p;
  expect(r.status).toBe('completed');
  expect(r.gates[0]!.value).toEqual({ b: 1 });
  expect(Object.keys(eventsOf(await store.events(id), 'gate.answered')[0]!.value as object)).toEqual(['b']);
  await expectReplays(store, r);
  await e.close();
}

/** Commands on an engine whose worker was closed (or crashed) while it drove the run go straight to the store: they never hang. */
export async function commandsAfterClose(makeStore: StoreFactory): Promise<void> {
  for (const how of ['closed', 'crashed'] as const) {
    const store = await makeStore();
    const clock = new ManualClock(0);
    const agents = { x: (ctx: AgentContext) => (ctx.phase === 'a' ? { risk: 9 } : {}), y: () => ({}) };
    const a = engineOn(store, clock, agents, { workerId: 'A', ...(how === 'crashed' ? { faults: { at: 'flush.before-commit' as const, hit: 2 } } : {}) });
    const id = await a.create(RISKY());
    const pa = a.drive(id, undefined);
    pa.catch(() => undefined);
    if (how === 'closed') {
      await untilStatus(store, id, 'waiting');
      await a.close();
    } else await expect(pa).rejects.toMatchObject({ code: 'fault-injected' });
    // closed: the run waits, so its gate is open. Crashed (before its second commit): a dead worker commits
    // nothing more, so one look says whether the gate opened; waiting for one that never comes (5,000 turns,
    // a read each) cost 15-30 s on PostgreSQL under load
    if (how === 'closed') await until(async () => (await store.events(id)).some((e) => e.type === 'gate.opened'), 'the gate');
    const gates = (await a.inspect(id)).result.gates;
    if (gates.length > 0) {
      await expect(a.approve(id, 'approval', 'mallory')).rejects.toMatchObject({ code: 'gate-refused' });
      await a.approve(id, 'approval', 'alice');
    }
    await a.cancel(id, 'done here');
    expect((await store.run(id))!.status).toBe('cancelled');
    await a.close();
  }
}

/**
 * An input gate that timed out is closed to answers; the retried attempt asks again on a new gate,
 * and after a restart the next attempt gets that new gate's answer back (the k-th question is the
 * latest gate opened for it).
 */
export async function inputTimeoutThenRetryAndRestart(makeStore: StoreFactory): Promise<void> {
  const model = wf(`${header()}workflow:
  ask: {assign: asker, outputs: {answer: string}, retry: {max_attempts: 3, initial_delay_ms: 0, retryable_errors: [InputTimeout]}}`);
  const store = await makeStore();
  const clock = new ManualClock(0);
  const seen: string[] = [];
  const asker = async (ctx: AgentContext) => {
    const v = (await ctx.requestInput({ question: 'name?', timeoutMs: 1000 })) as string;
    seen.push(`${ctx.attempt}:${v}`);
    return { answer: v };
  };
  const a = engineOn(store, clock, { asker }, { workerId: 'A' });
  const id = await a.create(model);
  const pa = a.drive(id, undefined);
  await untilStatus(store, id, 'waiting');
  await clock.advance(1000);
  await until(async () => (await a.inspect(id)).result.gates.length === 2, 'the retried attempt asks again');
  await expect(a.respond(id, 'input-ask-1', 'late', 'u')).rejects.toMatchObject({ code: 'gate-refused' });
  await a.close();
  await expect(pa).rejects.toBeDefined();
  const b = engineOn(store, clock, { asker }, { workerId: 'B', isOwnerDead: (o) => o === 'A' });
  await b.respond(id, 'input-ask-2', 'bob', 'u');
  const r = await withClock(clock, b.resume(id));
  expect(r.status).toBe('completed');
  expect(r.phases['ask']).toMatchObject({ attempts: 3, output: { answer: 'bob' } });
  expect(seen).toEqual(['3:bob']);
  expect(r.gates.map((g) => g.id)).toEqual(['input-ask-1', 'input-ask-2']);
  await expectReplays(store, r);
  await b.close();
}

/**
 * An agent that asks and returns (or throws) without awaiting the answer: its outcome is applied at
 * once, the question withdrawn (answers refused after), and the task is not run again. Before, the
 * outcome was recorded as stale, the run waited on the question, and once it was answered the task ran
 * again as a new attempt.
 */
export async function returnWithoutAwaitingTheAnswer(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  let calls = 0;
  let throwIt = false;
  const e = engineOn(store, clock, {
    asker: (ctx) => {
      calls++;
      void ctx.requestInput({ question: 'ship it?' }).catch(() => undefined);
      if (throwIt) throw new AgentError('Fatal', 'gave up without the answer', {}, false);
      return { answer: 'decided alone' };
    },
    plain: () => ({}),
  });
  const done = await e.run(ASK);
  expect(done.status).toBe('completed');
  expect(calls).toBe(1);
  expect(done.phases['ask']).toMatchObject({ status: 'completed', attempts: 1, output: { answer: 'decided alone' } });
  expect(done.gates).toEqual([expect.objectContaining({ id: 'input-ask-1', kind: 'input', status: 'withdrawn' })]);
  expect(eventsOf(done.events, 'task.stale_outcome')).toEqual([]);
  const types = done.events.map((x) => x.type);
  expect(types.indexOf('gate.withdrawn')).toBeLessThan(types.indexOf('task.completed'));
  await expect(e.respond(done.runId, 'input-ask-1', 'yes', 'carol')).rejects.toMatchObject({ code: 'gate-refused' });
  await expectReplays(store, done);

  throwIt = true;
  const failed = await e.run(ASK);
  expect(failed.status).toBe('failed');
  expect(calls).toBe(2);
  expect(failed.phases['ask']).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'Fatal' } });
  expect(failed.gates).toEqual([expect.objectContaining({ status: 'withdrawn' })]);
  await expectReplays(store, failed);
  await e.close();
}
