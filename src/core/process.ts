/** Processes of this host: start times (against reused pids) and ending an orphaned group. */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

/** Linux: the process's start time in clock ticks since boot (/proc/PID/stat field 22), or undefined elsewhere. */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name (field 2) may hold spaces and parentheses: count fields after its last ')'
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return rest[19];
  } catch {
    return undefined;
  }
}

/** An agent's process group as recorded with its attempt. */
export interface RecordedProcess {
  pid: number;
  pgid: number;
  host: string;
  start_time?: string;
  /**
   * A serve-mode process, shared by the attempts of the Baton process that started it (its pid and start
   * time): ended only once that Baton is gone, never under a live one (its other requests are its own).
   */
  owner_pid?: number;
  owner_start?: string;
}

/** Whether no process has this pid (kill(pid, 0) fails with ESRCH). */
function ownerGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as { code?: unknown }).code === 'ESRCH';
  }
}

/**
 * Ends a recorded process group if it still runs on this host and its leader is the same process
 * (same start time: a reused pid is left alone). True when a signal was sent.
 */
export function endRecordedGroup(p: RecordedProcess): boolean {
  if (p.host !== hostname() || process.platform === 'win32') return false;
  if (p.owner_pid !== undefined) {
    const owner = processStartTime(p.owner_pid);
    // the Baton that started the shared process still runs (or, off Linux, cannot be told apart): its process stays
    if (p.owner_pid === process.pid || (owner !== undefined && (p.owner_start === undefined || owner === p.owner_start))) return false;
    if (owner === undefined && !ownerGone(p.owner_pid)) return false;
  }
  if (p.start_time !== undefined) {
    const now = processStartTime(p.pid);
    // the leader is gone (or another process has its pid): its group may live on, but only a group we can name safely is ended
    if (now !== undefined && now !== p.start_time) return false;
  }
  try {
    process.kill(-p.pgid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}
