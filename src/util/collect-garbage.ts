import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | undefined;

/**
 * Runs V8's full garbage collection now, so memory the process just let go of (e.g. a run's known-line set,
 * ~10.8 bytes a report in shared buffers: 103 MiB at 10M reports) is given back before DuckDB's merge
 * needs the room. V8 would otherwise keep it until its own heap grew, which a merge in DuckDB never makes
 * it do. `--expose-gc` set at run time is seen by contexts created after it (Node docs, `v8.setFlagsFromString`
 * and `vm.runInNewContext`); a process started with `--expose-gc` uses its own `gc`. ~10–50 ms.
 */
export function collectGarbage(): void {
  if (gc === undefined) {
    const exposed = (globalThis as { gc?: () => void }).gc;
    if (exposed) gc = exposed;
    else {
      setFlagsFromString('--expose-gc');
      gc = runInNewContext('gc') as () => void;
    }
  }
  gc();
}
