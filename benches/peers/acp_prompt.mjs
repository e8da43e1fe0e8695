// Times one ACP prompt through the official ACP client SDK (@agentclientprotocol/sdk), the way
// an editor drives an agent: spawn, initialize, session/new, session/prompt ("Say hello."),
// close stdin, wait for exit. Prints one JSON line per run:
//   {"prompt_ms": …, "total_ms": …, "text": "…"}
// prompt_ms is session/prompt's request → response; total_ms is spawn → exit.
//
// Usage: node acp_prompt.mjs RUNS WORKSPACE -- AGENT ARGS…
// Every wait is bounded (20 s a step); a failure exits non-zero.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const sep = process.argv.indexOf("--");
const [runs, workspace] = process.argv.slice(2, sep);
const [cmd, ...args] = process.argv.slice(sep + 1);
if (sep < 0 || !cmd || !workspace) {
  console.error("usage: node acp_prompt.mjs RUNS WORKSPACE -- AGENT ARGS…");
  process.exit(2);
}

function within(promise, what, ms = 20_000) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function once() {
  const t0 = performance.now();
  const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (c) => (stderr += c));
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  let text = "";
  const app = acp
    .client({ name: "bench-acp-prompt" })
    .onRequest(acp.methods.client.session.requestPermission, async () => {
      throw new Error("unexpected permission request");
    })
    .onNotification(acp.methods.client.session.update, async ({ params }) => {
      const u = params.update;
      if (u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text") text += u.content.text;
    });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  let promptMs;
  try {
    await app.connectWith(stream, async (ctx) => {
      await within(
        ctx.request(acp.methods.agent.initialize, {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        }),
        "initialize",
      );
      const created = await within(
        ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] }),
        "session/new",
      );
      const p0 = performance.now();
      const answer = await within(
        ctx.request(acp.methods.agent.session.prompt, {
          sessionId: created.sessionId,
          prompt: [{ type: "text", text: "Say hello." }],
        }),
        "session/prompt",
      );
      promptMs = performance.now() - p0;
      if (answer.stopReason !== "end_turn") throw new Error(`stop reason ${answer.stopReason}`);
    });
  } catch (err) {
    child.kill("SIGKILL");
    throw new Error(`${err?.message ?? err}\nagent stderr: ${stderr.slice(-2000)}`);
  }
  child.stdin.end();
  // An agent that does not exit within 5 s of its stdin closing is killed (codex-acp 0.16 keeps
  // running); total_ms is then null and the row says so.
  const code = await within(exited, "agent exit after stdin closed", 5_000).catch(() => {
    child.kill("SIGKILL");
    return "killed";
  });
  if (code === "killed") return { prompt_ms: promptMs, total_ms: null, text, exited: false };
  if (code !== 0 && code !== null) throw new Error(`agent exited ${code}: ${stderr.slice(-2000)}`);
  return { prompt_ms: promptMs, total_ms: performance.now() - t0, text, exited: true };
}

for (let i = 0; i < Number(runs); i++) {
  console.log(JSON.stringify(await once()));
}
