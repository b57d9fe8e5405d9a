/**
 * Ctrl-C for an event loop that never comes back. A JavaScript SIGINT handler runs only when the
 * event loop turns, so an in-process agent stuck in a synchronous loop would make Ctrl-C do nothing.
 * A tiny shell process beside Baton (in the same process group, so the terminal's Ctrl-C reaches it
 * too) gives Baton a few seconds after the first Ctrl-C (killAtMs), and none after the second, then ends it
 * with SIGKILL and says how to continue. The run stays in the store (`baton resume`); an attempt in
 * flight runs again there. When Baton ends normally it stops the watchdog first.
 */
import { spawn, type ChildProcess } from 'node:child_process';

// No background jobs: a sleeping subshell would hold Baton's stderr open (a pipe would not close).
// Time is counted in ticks of the loop's 0.2 s sleep (POSIX date has no sub-second time): the first
// signal (its trap runs when the sleep in progress ends, at once when the signal reached the sleep too)
// starts BATON_TICKS ticks, and Baton is killed when they are out.
const SCRIPT = `
p=$BATON_PID; n=0; left=-1
trap 'n=$((n+1)); if [ $n -ge 2 ]; then kill -9 $p 2>/dev/null; echo "baton: stopped at once (second signal). $BATON_HINT" >&2; exit 0; fi; left=$BATON_TICKS' INT TERM HUP
while kill -0 $p 2>/dev/null; do
  if [ $left -eq 0 ]; then kill -9 $p 2>/dev/null; echo "baton: an agent held the process $BATON_GRACE s after the signal; stopped. $BATON_HINT" >&2; exit 0; fi
  if [ $left -gt 0 ]; then left=$((left-1)); fi
  sleep 0.2 </dev/null >/dev/null 2>&1
done
`;

/** The loop's tick (its sleep), and what one costs beyond it at most (a fork of sleep, kill -0). */
const TICK_MS = 200;
const TICK_COST_MS = 10;

/** `killAtMs`: after the first signal, Baton is killed by then at the latest (a tick sooner, rather than later). */
export function startWatchdog(killAtMs: number, hint: string): { stop(): void } {
  const ticks = Math.max(1, Math.floor((killAtMs - TICK_MS) / (TICK_MS + TICK_COST_MS)));
  let child: ChildProcess | undefined;
  try {
    child = spawn('sh', ['-c', SCRIPT], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, BATON_PID: String(process.pid), BATON_GRACE: String(Math.round(killAtMs / 100) / 10), BATON_TICKS: String(ticks), BATON_HINT: hint },
    });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    child = undefined; // no shell: Ctrl-C still works whenever the event loop turns
  }
  return {
    stop: () => {
      if (child && child.exitCode === null) child.kill('SIGKILL');
    },
  };
}
