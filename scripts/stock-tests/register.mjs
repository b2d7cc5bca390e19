// Loaded with node --import: puts server-shim.mjs where the stock tests
// import the stock server (see run.sh).
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url, { data: { checkout: process.env.AGENTCHAT_CHECKOUT } });
