/** The package version, reported by `--version` and in the MCP `serverInfo`. A test keeps it equal to package.json's. */
export const VERSION = '0.1.0';
