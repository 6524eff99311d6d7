#!/usr/bin/env node
/**
 * The `intent-mcp` command. This early version answers `--help`, `--version` and `diagram`; `serve` arrives with the
 * server (issue 5).
 */
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { HANDOFF_STATES } from '../machines/handoff.js';
import { toDot, toMermaid } from './engine/diagram.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const program = new Command('intent-mcp')
  .description('Turn natural-language requests into structured intents, served over MCP.')
  .version(pkg.version)
  .configureOutput({ writeErr: (s) => process.stderr.write(s) })
  .exitOverride((err) => {
    process.exit(err.exitCode === 0 ? 0 : 2);
  });

program
  .command('diagram')
  .description('print the handoff machine, generated from its definition')
  .addOption(new Option('--format <format>', 'diagram format').choices(['mermaid', 'dot']).default('mermaid'))
  .addOption(new Option('--highlight <state>', 'highlight one state').choices([...HANDOFF_STATES]))
  .action((opts: { format: 'mermaid' | 'dot'; highlight?: string }) => {
    const render = opts.format === 'dot' ? toDot : toMermaid;
    process.stdout.write(render({ highlight: opts.highlight }));
  });

program.parse();
