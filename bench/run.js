// `npm run bench` runs `node bench/run.js`: the benchmark itself is bench/run.ts, compiled to dist/bench/run.js.
import '../dist/bench/run.js';
