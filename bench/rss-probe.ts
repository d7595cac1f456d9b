// Preloaded into a benchmarked process with `node --import`: writes its peak RSS (bytes) to the file named
// by BENCH_RSS_FILE when it exits. `process.resourceUsage().maxRSS` is the kernel's high-water mark (KiB),
// so short peaks between two polls are counted too.
import { writeFileSync } from 'node:fs';

const file = process.env.BENCH_RSS_FILE;
if (file) {
  process.on('exit', () => {
    writeFileSync(file, String(process.resourceUsage().maxRSS * 1024));
  });
}
