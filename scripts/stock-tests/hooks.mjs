// Module hooks: a test file of the AgentChat checkout that imports
// dist/lib/server.js gets server-shim.mjs instead. Everything else (the
// stock client, identity, protocol helpers) stays the checkout's own.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

let server, tests;
const shim = new URL('./server-shim.mjs', import.meta.url).href;

export function initialize({ checkout }) {
  server = pathToFileURL(path.join(checkout, 'dist/lib/server.js')).href;
  tests = pathToFileURL(path.join(checkout, 'test')).href + '/';
}

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (resolved.url === server && context.parentURL?.startsWith(tests)) {
    return { url: shim, shortCircuit: true };
  }
  return resolved;
}
