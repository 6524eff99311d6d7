/**
 * The long form of the issue-12 soak: `node --expose-gc dist/bench/soak.js [--handoffs N] [--sessions N] [--seed N]`
 * (default 100,000 handoffs across 1,000 sessions; the short form in test/soak/soak.test.ts runs a fifth of it). Prints
 * progress and the report as JSON; exits 1 when a check fails. Without `--expose-gc` it runs itself again with the flag.
 */
import { runSoak } from '../test/soak/soak.js';
import { positiveIntArg, rerunWithExposeGc } from './support.js';

rerunWithExposeGc('soak');

const handoffs = positiveIntArg('handoffs', 100_000, 'soak');
const sessions = positiveIntArg('sessions', 1000, 'soak');
const report = await runSoak({
  handoffs,
  sessions,
  seed: positiveIntArg('seed', 12, 'soak'),
  onProgress: (done) => {
    process.stdout.write(`  ${done.toLocaleString('en')} handoffs\n`);
  },
});
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
const failures = [
  report.liveBeforeClose === report.leftPending ? '' : 'live requests other than the ones left pending',
  report.liveAfterClose === 0 && report.sessionsAfterClose === 0 ? '' : 'live requests after closing every session',
  report.storeNeverOver ? '' : 'the store went past its bounds',
  Math.abs(report.heapAfter - report.heapBaseline) < 2 * 1024 * 1024 ? '' : 'the heap did not return to its baseline',
  report.healthz.status === 200 && report.httpHandoffOk ? '' : 'the server stopped answering',
].filter((f) => f !== '');
process.stdout.write(failures.length === 0 ? 'soak: every check passed\n' : `soak FAILED: ${failures.join('; ')}\n`);
process.exit(failures.length === 0 ? 0 : 1);
