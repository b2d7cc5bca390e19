// Stands in for the stock AgentChatServer in the stock tests: start() runs
// `foreman serve` ($FOREMAN_BIN) on the test's port and returns once it
// listens; stop() ends it. Only the options with a counterpart in foreman
// serve are passed on; the server's internals (its maps, getHealth) are not
// reproduced, so a test that reads them fails, as it should.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';

const running = new Set();
const killAll = () => running.forEach((child) => child.kill('SIGKILL'));
process.on('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => { killAll(); process.exit(128 + (signal === 'SIGINT' ? 2 : 15)); });
}

// Waits until something listens on the port, or the server has died.
const waitForPort = `
const [port, pid] = process.argv.slice(-2).map(Number);
const until = Date.now() + 30000;
const attempt = () => {
  try { process.kill(pid, 0); } catch { process.exit(2); }
  const s = require('net').connect(port, '127.0.0.1');
  s.on('connect', () => { s.end(); process.exit(0); });
  s.on('error', () => Date.now() > until ? process.exit(1) : setTimeout(attempt, 20));
};
attempt();`;

export class AgentChatServer {
  constructor(options = {}) {
    this.options = options;
    this.port = options.port || 6667;
    this.host = '127.0.0.1';
    this.serverName = options.name || 'agentchat';
    // The stock server doubles its hold on an identity taken over again
    // and again, and its tests clear that between tests. foreman serve
    // always holds 5 s: there is nothing to clear.
    this.reconnectBackoff = new Map();
  }

  start() {
    const o = this.options;
    const args = ['serve', '--listen', `127.0.0.1:${this.port}`, '--name', this.serverName,
      '--channel', '#general', // the stock channels only
      '--rate-limit', `${o.rateLimitMs || 1000}ms`,
      '--buffer-size', String(o.messageBufferSize || 200),
      '--challenge-timeout', `${o.challengeTimeoutMs || 60000}ms`,
      '--verify-timeout', `${o.verificationTimeoutMs || 30000}ms`];
    // The stock server reads LURK_DISABLED at every message; the tests set
    // it before they start the server.
    if (process.env.LURK_DISABLED !== 'true') args.push('--lurk');
    const logFile = `foreman-serve-${this.port}.log`;
    const log = fs.openSync(logFile, 'a');
    this.child = spawn(process.env.FOREMAN_BIN, args, { stdio: ['ignore', log, log] });
    running.add(this.child);
    fs.appendFileSync('foreman-serve.pids', `${this.child.pid}\n`); // for run.sh to clean up after a crash
    try {
      execFileSync(process.execPath, ['-e', waitForPort, String(this.port), String(this.child.pid)]);
    } catch {
      throw new Error(`foreman serve did not start on port ${this.port}:\n${fs.readFileSync(logFile, 'utf8').slice(-2000)}`);
    }
    return this;
  }

  stop() {
    this.child?.kill('SIGTERM');
    running.delete(this.child);
  }
}
