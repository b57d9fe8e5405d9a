/**
 * Ctrl-C for an event loop that never comes back. A JavaScript SIGINT handler runs only when the
 * event loop turns, so an in-process agent stuck in a synchronous loop would make Ctrl-C do nothing.
 * A tiny shell process beside Baton (in the same process group, so the terminal's Ctrl-C reaches it
 * too) gives Baton GRACE seconds after the first Ctrl-C, and none after the second, then ends it
 * with SIGKILL and says how to continue. The run stays in the store (`baton resume`); an attempt in
 * flight runs again there. When Baton ends normally it stops the watchdog first.
 */
import { spawn, type ChildProcess } from 'node:child_process';

// No background jobs: a sleeping subshell would hold Baton's stderr open (a pipe would not close).
const SCRIPT = `
p=$BATON_PID; n=0; d=0
trap 'n=$((n+1)); if [ $n -ge 2 ]; then kill -9 $p 2>/dev/null; echo "baton: stopped at once (second signal). $BATON_HINT" >&2; exit 0; fi; d=$(( $(date +%s) + BATON_GRACE ))' INT TERM
while kill -0 $p 2>/dev/null; do
  if [ $d -gt 0 ] && [ $(date +%s) -ge $d ]; then kill -9 $p 2>/dev/null; echo "baton: an agent held the process $BATON_GRACE s after the signal; stopped. $BATON_HINT" >&2; exit 0; fi
  sleep 0.2 </dev/null >/dev/null 2>&1
done
`;

export function startWatchdog(graceS: number, hint: string): { stop(): void } {
  let child: ChildProcess | undefined;
  try {
    child = spawn('sh', ['-c', SCRIPT], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, BATON_PID: String(process.pid), BATON_GRACE: String(graceS), BATON_HINT: hint },
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
