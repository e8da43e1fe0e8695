// `adapter-acp acp` with an editor that lends it what ACP lets it: the official ACP client
// SDK (@agentclientprotocol/sdk) plays an editor with unsaved buffers, real terminals
// (processes it starts itself) and forms. The model is the test's mock server (OpenAI
// Chat Completions, two listed models); tests/acp_node.rs checks what reached it.
//
// Usage: node editor.mjs <adapter-acp binary> <mock server /v1 URL> [<node> <server-everything script>]
//
// Scenarios (each in a session of its own; its prompt names it, the mock answers by name):
//  1. initialize advertises resume/close/delete; session/new answers configOptions: mode,
//     and model with the mock server's two models; set_config_option sets the mode.
//  2. read_file sees the editor's unsaved buffer, not the disk (fs/read_text_file, absolute
//     path); the first prompt gives the session its title (session_info_update).
//  3. write_file goes to the editor (fs/write_text_file) and not to the disk.
//  4. bash runs in an editor terminal: terminal/create, the call's content names the
//     terminal, its output is the result, the terminal is released.
//  4b. exec_command runs in an editor terminal that lives across calls: write_stdin's input
//     reaches the command, its "\u0003" kills it, and each terminal is released.
//  5. cancelling a prompt whose bash runs kills the terminal and releases it.
//  6. a read the editor fails is the call's error; the turn ends normally.
//  7. ask_user is one elicitation/create form; the answer reaches the model.
//  7b. an @-mentioned file (resource_link) reaches the model read from the editor's buffer;
//     a link outside the workspace is not read (the model is told why); an embedded
//     resource's text goes as context.
//  8. set_config_option switches the model of the next request; bad ids and values are
//     invalid params.
//  9. close, resume (no replay; the next prompt keeps the history), delete (gone).
// 10. a workspace slash command reaches the client (available_commands_update) and a
//     `/name args` prompt reaches the model expanded.
// 11. (with server-everything) an MCP server's elicitation is answered through the client;
//     a resource_link to one of its resources reaches the model read.
// 12. (with $ACP_TEST_OAUTH_MCP, an MCP server behind OAuth) its authorization URL is an
//     elicitation/create in url mode (the editor advertises elicitation.url); the editor's
//     "browser" follows it to the agent's callback, the agent sends elicitation/complete
//     for it, and the server's tool then works.
//
// Every wait is bounded; the process exits non-zero on the first failure.

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Readable, Writable } from "node:stream";
import assert from "node:assert/strict";
import * as acp from "@agentclientprotocol/sdk";
import { STEP_TIMEOUT_MS, deferred, limitTotal, within } from "./harness.mjs";

const [BIN, MOCK, MCP_NODE, MCP_SCRIPT] = process.argv.slice(2);
/** The URL of an MCP server behind OAuth (test-support's), for scenario 12. */
const OAUTH_MCP = process.env.ACP_TEST_OAUTH_MCP;
if (!BIN || !MOCK) {
  console.error("usage: node editor.mjs <adapter-acp binary> <mock /v1 URL> [<node> <everything script>]");
  process.exit(2);
}

limitTotal(150_000);

async function until(check, what) {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const root = mkdtempSync(join(tmpdir(), "acp-editor-"));
const workspace = join(root, "ws");
const dataDir = join(root, "data");
mkdirSync(workspace);
mkdirSync(dataDir);
const notes = join(workspace, "notes.txt");
writeFileSync(notes, "disk text\n");
mkdirSync(join(workspace, ".claude", "commands"), { recursive: true });
writeFileSync(
  join(workspace, ".claude", "commands", "greet.md"),
  "---\ndescription: Greet someone\nargument-hint: <name>\n---\n[scenario-cmd] Greet $1 warmly.\n",
);

/** The editor: buffers (unsaved text by path), terminals it runs itself, a log of requests. */
const editor = {
  buffers: new Map([[notes, "unsaved buffer text\n"]]),
  reads: [],
  writes: [],
  terminals: new Map(),
  nextTerminal: 1,
  created: deferred(),
  elicitations: [],
  completedElicitations: [],
  answerElicitation: null,
};

function createTerminal(params) {
  const id = `term_${editor.nextTerminal++}`;
  const env = { ...process.env };
  for (const { name, value } of params.env ?? []) env[name] = value;
  const child = spawn(params.command, params.args ?? [], { cwd: params.cwd, env });
  const terminal = {
    id,
    params,
    child,
    output: "",
    truncated: false,
    exit: null,
    exited: deferred(),
    killed: false,
    released: false,
  };
  const append = (chunk) => {
    terminal.output += chunk.toString();
    const limit = params.outputByteLimit;
    if (limit != null && Buffer.byteLength(terminal.output) > limit) {
      terminal.output = Buffer.from(terminal.output).subarray(-limit).toString();
      terminal.truncated = true;
    }
  };
  child.stdout.on("data", append);
  child.stderr.on("data", append);
  child.on("error", (err) => {
    append(`${err}\n`);
    terminal.exit = { exitCode: 127, signal: null };
    terminal.exited.resolve();
  });
  child.on("exit", (code, signal) => {
    terminal.exit = { exitCode: code, signal };
    terminal.exited.resolve();
  });
  editor.terminals.set(id, terminal);
  editor.created.resolve(terminal);
  return id;
}

function terminal(params) {
  const found = editor.terminals.get(params.terminalId);
  if (!found) throw new Error(`unknown terminal ${params.terminalId}`);
  return found;
}

const updates = [];
const child = spawn(
  BIN,
  ["acp", "--provider", "openai", "--base-url", MOCK, "--api-key", "sk-editor-test", "--model", "mock-model-small", "--data-dir", dataDir],
  { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ADAPTER_ACP_LOG: "warn" } },
);
let stderr = "";
child.stderr.on("data", (chunk) => (stderr += chunk));
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

const app = acp
  .client({ name: "adapter-acp-editor-test" })
  .onRequest(acp.methods.client.session.requestPermission, async () => {
    throw new Error("no permission request expected in yolo mode");
  })
  .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
    editor.reads.push(params);
    const text = editor.buffers.get(params.path);
    if (text === undefined) throw new Error(`no buffer for ${params.path}`);
    let lines = text.split(/(?<=\n)/);
    if (params.line) lines = lines.slice(params.line - 1);
    if (params.limit) lines = lines.slice(0, params.limit);
    return { content: lines.join("") };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
    editor.writes.push(params);
    editor.buffers.set(params.path, params.content);
    return {};
  })
  .onRequest(acp.methods.client.terminal.create, async ({ params }) => ({ terminalId: createTerminal(params) }))
  .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => {
    const t = terminal(params);
    await t.exited.promise;
    return t.exit;
  })
  .onRequest(acp.methods.client.terminal.output, async ({ params }) => {
    const t = terminal(params);
    return { output: t.output, truncated: t.truncated, exitStatus: t.exit ?? undefined };
  })
  .onRequest(acp.methods.client.terminal.kill, async ({ params }) => {
    const t = terminal(params);
    t.killed = true;
    if (!t.exit) t.child.kill("SIGKILL");
    return {};
  })
  .onRequest(acp.methods.client.terminal.release, async ({ params }) => {
    const t = terminal(params);
    if (!t.exit) t.child.kill("SIGKILL");
    t.released = true;
    return {};
  })
  .onRequest(acp.methods.client.elicitation.create, async ({ params }) => {
    editor.elicitations.push(params);
    if (!editor.answerElicitation) throw new Error("unexpected elicitation");
    return editor.answerElicitation(params);
  })
  .onNotification(acp.methods.client.elicitation.complete, async ({ params }) => {
    editor.completedElicitations.push(params.elicitationId);
  })
  .onNotification(acp.methods.client.session.update, async ({ params }) => {
    updates.push({ sessionId: params.sessionId, update: params.update });
  });

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

function updatesOf(sessionId, from = 0) {
  return updates.slice(from).filter((u) => u.sessionId === sessionId).map((u) => u.update);
}

function callUpdates(sessionId, from = 0) {
  return updatesOf(sessionId, from).filter((u) => u.sessionUpdate === "tool_call_update");
}

function contentText(update) {
  return (update?.content ?? [])
    .map((c) => (c.type === "content" && c.content.type === "text" ? c.content.text : ""))
    .join("");
}

let failures = 0;
async function scenario(name, fn) {
  try {
    await fn();
    console.log(`ok - ${name}`);
  } catch (err) {
    failures += 1;
    console.error(`not ok - ${name}\n${err?.stack ?? err}`);
    throw err;
  }
}

try {
  await app.connectWith(stream, async (ctx) => {
    const prompt = (sessionId, text) =>
      ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
    const newSession = async (extra = {}) => {
      const created = await within(
        ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [], ...extra }),
        "session/new",
      );
      const set = await within(
        ctx.request(acp.methods.agent.session.setConfigOption, {
          sessionId: created.sessionId,
          configId: "mode",
          value: "yolo",
        }),
        "set_config_option mode",
      );
      assert.equal(set.configOptions.find((o) => o.id === "mode")?.currentValue, "yolo");
      return created;
    };

    await scenario("initialize, configOptions with the provider's models", async () => {
      const init = await within(
        ctx.request(acp.methods.agent.initialize, {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: {
            fs: { readTextFile: true, writeTextFile: true },
            terminal: true,
            elicitation: { form: {}, url: {} },
          },
        }),
        "initialize",
      );
      const caps = init.agentCapabilities?.sessionCapabilities ?? {};
      for (const cap of ["list", "resume", "close", "delete"]) assert.ok(caps[cap], `sessionCapabilities.${cap}`);
      const created = await within(
        ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] }),
        "session/new",
      );
      const options = created.configOptions ?? [];
      const model = options.find((o) => o.id === "model");
      assert.equal(model?.type, "select");
      assert.equal(model.category, "model");
      assert.equal(model.currentValue, "mock-model-small");
      assert.deepEqual(model.options.map((o) => o.value), ["mock-model-small", "mock-model-large"]);
      const mode = options.find((o) => o.id === "mode");
      assert.equal(mode?.currentValue, "build");
      assert.equal(mode.category, "mode");
      assert.ok(mode.options.some((o) => o.value === "yolo"));
      const before = updates.length;
      const set = await within(
        ctx.request(acp.methods.agent.session.setConfigOption, {
          sessionId: created.sessionId,
          configId: "mode",
          value: "plan",
        }),
        "set_config_option",
      );
      assert.equal(set.configOptions.find((o) => o.id === "mode").currentValue, "plan");
      assert.ok(set.configOptions.some((o) => o.id === "model"), "the whole set");
      await until(
        () => updatesOf(created.sessionId, before).some((u) => u.sessionUpdate === "current_mode_update" && u.currentModeId === "plan"),
        "current_mode_update",
      );
      // The legacy set_mode keeps the option in step.
      await within(
        ctx.request(acp.methods.agent.session.setMode, { sessionId: created.sessionId, modeId: "edit" }),
        "set_mode",
      );
      await until(
        () =>
          updatesOf(created.sessionId, before).some(
            (u) => u.sessionUpdate === "config_option_update" && u.configOptions.find((o) => o.id === "mode")?.currentValue === "edit",
          ),
        "config_option_update after set_mode",
      );
    });

    await scenario("read_file sees the unsaved buffer, not the disk; the first prompt titles the session", async () => {
      const { sessionId } = await newSession();
      const before = updates.length;
      const response = await within(prompt(sessionId, "[scenario-read] Read the notes."), "prompt (read)");
      assert.equal(response.stopReason, "end_turn");
      assert.equal(editor.reads.length, 1);
      assert.equal(editor.reads[0].path, notes, "an absolute path");
      assert.equal(editor.reads[0].sessionId, sessionId);
      const done = callUpdates(sessionId, before).filter((u) => u.status === "completed").at(-1);
      assert.match(contentText(done), /unsaved buffer text/);
      assert.doesNotMatch(contentText(done), /disk text/);
      const info = updatesOf(sessionId, before).find((u) => u.sessionUpdate === "session_info_update");
      assert.equal(info?.title, "[scenario-read] Read the notes.");
    });

    await scenario("write_file goes to the editor, not to the disk", async () => {
      const { sessionId } = await newSession();
      const response = await within(prompt(sessionId, "[scenario-write] Write a file."), "prompt (write)");
      assert.equal(response.stopReason, "end_turn");
      assert.equal(editor.writes.length, 1);
      assert.equal(editor.writes[0].path, join(workspace, "new.txt"));
      assert.equal(editor.writes[0].content, "written via the editor\n");
      assert.ok(!existsSync(join(workspace, "new.txt")), "nothing written to the disk");
    });

    await scenario("bash runs in an editor terminal, which the call names and which is released", async () => {
      const { sessionId } = await newSession();
      const before = updates.length;
      editor.created = deferred();
      const response = await within(prompt(sessionId, "[scenario-bash] Run a command."), "prompt (bash)");
      assert.equal(response.stopReason, "end_turn");
      const t = await within(editor.created.promise, "terminal/create");
      assert.equal(t.params.sessionId, sessionId);
      assert.equal(t.params.cwd, workspace);
      assert.ok(t.params.outputByteLimit > 0, "outputByteLimit");
      assert.ok(t.params.env.some((e) => e.name === "PAGER"), "env");
      // The default sandbox confines the command: the agent's own binary confines itself
      // and becomes `bash -lc …` in the editor's terminal.
      assert.equal(t.params.command, BIN);
      assert.equal(t.params.args[0], "__agent-sandbox-exec");
      assert.deepEqual(t.params.args.slice(2, 5), ["--", "bash", "-lc"]);
      assert.match(t.params.args.at(-1), /echo from-terminal$/);
      const calls = callUpdates(sessionId, before);
      const named = calls.find((u) => u.content?.some((c) => c.type === "terminal" && c.terminalId === t.id));
      assert.ok(named, "a tool_call_update names the terminal");
      const done = calls.filter((u) => u.status === "completed").at(-1);
      assert.equal(done.content[0].type, "terminal", "the terminal stays in the final content");
      assert.match(contentText(done), /from-terminal/);
      assert.ok(t.released, "terminal/release");
      assert.ok(!t.killed, "a command that ended is not killed");
    });

    await scenario("exec_command runs in an editor terminal; write_stdin feeds it and \\u0003 kills it", async () => {
      const { sessionId } = await newSession();
      const before = updates.length;
      const created = editor.nextTerminal;
      const response = await within(prompt(sessionId, "[scenario-exec] Drive a command."), "prompt (exec)");
      assert.equal(response.stopReason, "end_turn");
      const [echo, sleeper] = [created, created + 1].map((n) => editor.terminals.get(`term_${n}`));
      assert.ok(echo && sleeper, "two terminals created");
      assert.equal(echo.params.sessionId, sessionId);
      assert.equal(echo.params.cwd, workspace);
      assert.match(echo.params.args.at(-1), /exec 0<.*\necho ready; read line; echo got:\$line$/);
      const calls = callUpdates(sessionId, before);
      const named = (call, t) =>
        calls.some((u) => u.toolCallId === call && u.content?.some((c) => c.type === "terminal" && c.terminalId === t.id));
      assert.ok(named("call_exec", echo), "exec_command's call names its terminal");
      assert.ok(named("call_stdin", echo), "write_stdin's call names the same terminal");
      const done = (call) => calls.filter((u) => u.toolCallId === call && u.status).at(-1);
      assert.match(contentText(done("call_exec")), /ready[\s\S]*session_id: 1/);
      assert.equal(done("call_stdin").status, "completed");
      assert.match(contentText(done("call_stdin")), /got:hi[\s\S]*exit_code: 0/);
      assert.ok(!echo.killed, "a command that ended is not killed");
      assert.match(contentText(done("call_interrupt")), /interrupted: true/);
      assert.ok(sleeper.killed, "\\u0003 is terminal/kill");
      await until(() => echo.released && sleeper.released, "both terminals released");
    });

    await scenario("cancel kills the command's terminal and releases it", async () => {
      const { sessionId } = await newSession();
      editor.created = deferred();
      const running = prompt(sessionId, "[scenario-cancel] Run a long command.");
      const t = await within(editor.created.promise, "terminal/create (long)");
      await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
      const response = await within(running, "prompt (cancel)");
      assert.equal(response.stopReason, "cancelled");
      await until(() => t.killed && t.released, "terminal/kill and terminal/release");
      await within(t.exited.promise, "the killed command ends");
    });

    await scenario("a read the editor fails is the call's error; the turn ends", async () => {
      const { sessionId } = await newSession();
      const before = updates.length;
      const response = await within(prompt(sessionId, "[scenario-fail] Read a missing file."), "prompt (fail)");
      assert.equal(response.stopReason, "end_turn");
      const failed = callUpdates(sessionId, before).filter((u) => u.status === "failed").at(-1);
      assert.ok(failed, "the call failed");
      assert.match(contentText(failed), /no buffer for/);
    });

    await scenario("ask_user is one elicitation form", async () => {
      const { sessionId } = await newSession();
      const before = updates.length;
      const asked = editor.elicitations.length;
      editor.answerElicitation = (params) => {
        assert.equal(params.mode, "form");
        assert.equal(params.sessionId, sessionId);
        assert.equal(params.toolCallId, "call_ask");
        const q = params.requestedSchema.properties.q_0;
        assert.equal(q.title, "Pick a color");
        assert.deepEqual(q.oneOf.map((o) => o.const), ["Red", "Blue"]);
        return { action: "accept", content: { q_0: "Blue" } };
      };
      const response = await within(prompt(sessionId, "[scenario-ask] Ask me."), "prompt (ask)");
      assert.equal(response.stopReason, "end_turn");
      assert.equal(editor.elicitations.length, asked + 1);
      const done = callUpdates(sessionId, before).filter((u) => u.status === "completed").at(-1);
      assert.match(contentText(done), /Pick a color: Blue/);
      editor.answerElicitation = null;
    });

    await scenario("a resource_link is read (the editor's buffer) and an embedded resource is context", async () => {
      const { sessionId } = await newSession();
      const reads = editor.reads.length;
      const response = await within(
        ctx.request(acp.methods.agent.session.prompt, {
          sessionId,
          prompt: [
            { type: "text", text: "[scenario-mention] Look at " },
            { type: "resource_link", name: "notes.txt", uri: pathToFileURL(notes).href },
            { type: "text", text: " and " },
            { type: "resource_link", name: "passwd", uri: "file:///etc/passwd" },
            {
              type: "resource",
              resource: { uri: "file:///elsewhere/spec.md", mimeType: "text/markdown", text: "embedded spec text" },
            },
          ],
        }),
        "prompt (mention)",
      );
      assert.equal(response.stopReason, "end_turn");
      assert.equal(editor.reads.length, reads + 1, "one fs/read_text_file: the file in the workspace");
      assert.equal(editor.reads.at(-1).path, notes);
      assert.equal(editor.reads.at(-1).sessionId, sessionId);
    });

    await scenario("set_config_option switches the model of the next request", async () => {
      const { sessionId } = await newSession();
      const set = await within(
        ctx.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: "model", value: "mock-model-large" }),
        "set_config_option model",
      );
      assert.equal(set.configOptions.find((o) => o.id === "model").currentValue, "mock-model-large");
      for (const [configId, value] of [["model", "no-such-model"], ["nonsense", "x"], ["mode", "nonsense"]]) {
        await assert.rejects(
          within(ctx.request(acp.methods.agent.session.setConfigOption, { sessionId, configId, value }), `bad ${configId}`),
          (err) => err?.code === -32602,
        );
      }
      const response = await within(prompt(sessionId, "[scenario-model] Which model?"), "prompt (model)");
      assert.equal(response.stopReason, "end_turn");
    });

    await scenario("close, resume (the next prompt keeps the history), delete", async () => {
      const { sessionId } = await newSession();
      await within(prompt(sessionId, "[scenario-resume] first prompt"), "prompt (first)");
      await within(ctx.request(acp.methods.agent.session.close, { sessionId }), "session/close");
      await assert.rejects(
        within(prompt(sessionId, "[scenario-resume] after close"), "prompt after close"),
        (err) => typeof err?.code === "number",
      );
      const listed = await within(ctx.request(acp.methods.agent.session.list, {}), "list after close");
      assert.ok(listed.sessions.some((s) => s.sessionId === sessionId), "a closed session stays stored");
      const before = updates.length;
      const resumed = await within(
        ctx.request(acp.methods.agent.session.resume, { sessionId, cwd: workspace, mcpServers: [] }),
        "session/resume",
      );
      assert.equal(updatesOf(sessionId, before).length, 0, "resume replays nothing");
      assert.equal(resumed.configOptions.find((o) => o.id === "mode").currentValue, "yolo");
      const response = await within(prompt(sessionId, "[scenario-resume] second prompt"), "prompt (after resume)");
      assert.equal(response.stopReason, "end_turn");
      await within(ctx.request(acp.methods.agent.session.delete, { sessionId }), "session/delete");
      const after = await within(ctx.request(acp.methods.agent.session.list, {}), "list after delete");
      assert.ok(!after.sessions.some((s) => s.sessionId === sessionId), "gone from the list");
      assert.ok(!existsSync(join(dataDir, "sessions", sessionId)), "gone from the disk");
      await assert.rejects(
        within(ctx.request(acp.methods.agent.session.load, { sessionId, cwd: workspace, mcpServers: [] }), "load deleted"),
        (err) => typeof err?.code === "number",
      );
    });

    await scenario("slash commands reach the client and expand", async () => {
      const before = updates.length;
      const { sessionId } = await newSession();
      await until(
        () =>
          updatesOf(sessionId, before).some(
            (u) => u.sessionUpdate === "available_commands_update" && u.availableCommands.some((c) => c.name === "greet"),
          ),
        "available_commands_update with greet",
      );
      const greet = updatesOf(sessionId, before)
        .find((u) => u.sessionUpdate === "available_commands_update")
        .availableCommands.find((c) => c.name === "greet");
      assert.equal(greet.description, "Greet someone");
      assert.equal(greet.input?.hint, "<name>");
      const response = await within(prompt(sessionId, "/greet Ada"), "prompt (/greet)");
      assert.equal(response.stopReason, "end_turn");
    });

    if (MCP_NODE && MCP_SCRIPT) {
      await scenario("an MCP server's elicitation is answered through the client", async () => {
        const { sessionId } = await newSession({
          mcpServers: [{ name: "everything", command: MCP_NODE, args: [MCP_SCRIPT], env: [] }],
        });
        const before = updates.length;
        editor.answerElicitation = (params) => {
          assert.equal(params.mode, "form");
          assert.equal(params.sessionId, sessionId);
          assert.ok(params.requestedSchema.properties.name, "the server's schema");
          return { action: "accept", content: { name: "Ada Lovelace", check: true } };
        };
        const response = await within(prompt(sessionId, "[scenario-mcp] Ask through MCP."), "prompt (mcp)", 60_000);
        assert.equal(response.stopReason, "end_turn");
        const done = callUpdates(sessionId, before).filter((u) => u.status === "completed").at(-1);
        assert.match(contentText(done), /Name: Ada Lovelace/);
        editor.answerElicitation = null;
      });
      await scenario("a resource_link to an MCP resource is read from the session's server", async () => {
        const { sessionId } = await newSession({
          mcpServers: [{ name: "everything", command: MCP_NODE, args: [MCP_SCRIPT], env: [] }],
        });
        const response = await within(
          ctx.request(acp.methods.agent.session.prompt, {
            sessionId,
            prompt: [
              { type: "text", text: "[scenario-mcp-resource] Summarize " },
              { type: "resource_link", name: "features.md", uri: "demo://resource/static/document/features.md" },
            ],
          }),
          "prompt (mcp resource)",
          60_000,
        );
        assert.equal(response.stopReason, "end_turn");
      });
    } else {
      console.log("skipped: the MCP elicitation scenario (no server-everything)");
    }

    if (OAUTH_MCP) {
      await scenario("an MCP server's authorization URL is an elicitation in url mode", async () => {
        const asked = editor.elicitations.length;
        let visit = null;
        editor.answerElicitation = (params) => {
          assert.equal(params.mode, "url");
          assert.equal(typeof params.sessionId, "string");
          assert.ok(params.elicitationId, "an elicitation id");
          assert.match(params.message, /\bdocs\b/);
          const url = new URL(params.url);
          assert.equal(url.origin, new URL(OAUTH_MCP).origin, "the server's authorization server");
          assert.equal(url.pathname, "/authorize");
          assert.equal(url.searchParams.get("response_type"), "code");
          assert.equal(url.searchParams.get("code_challenge_method"), "S256");
          assert.equal(new URL(url.searchParams.get("redirect_uri")).hostname, "127.0.0.1", "a loopback callback");
          // The user accepts and the editor opens the URL in a browser: it follows the
          // authorization server's redirect to the agent's callback.
          visit = fetch(params.url, { redirect: "follow" }).then(async (r) => ({ status: r.status, text: await r.text() }));
          return { action: "accept" };
        };
        const { sessionId } = await newSession({
          mcpServers: [{ type: "http", name: "docs", url: OAUTH_MCP, headers: [] }],
        });
        assert.equal(editor.elicitations.length, asked + 1, "one elicitation");
        assert.equal(editor.elicitations.at(-1).sessionId, sessionId);
        assert.ok(visit, "the URL was opened");
        const page = await within(visit, "the browser's visit");
        assert.equal(page.status, 200);
        assert.match(page.text, /Authorization complete/);
        // The sign-in is over: the agent says so, for the editor to take its prompt down.
        const shown = editor.elicitations.at(-1).elicitationId;
        await until(() => editor.completedElicitations.includes(shown), "elicitation/complete");
        editor.answerElicitation = null;
        const before = updates.length;
        const response = await within(prompt(sessionId, "[scenario-oauth] Who am I?"), "prompt (oauth)");
        assert.equal(response.stopReason, "end_turn");
        const done = callUpdates(sessionId, before).filter((u) => u.status === "completed").at(-1);
        assert.match(contentText(done), /authorized as /);
      });
    } else {
      console.log("skipped: the MCP authorization URL scenario (no ACP_TEST_OAUTH_MCP)");
    }
  });
  child.stdin.end();
  await within(exited, "agent exit after stdin closed");
  console.log("all editor scenarios passed");
  rmSync(root, { recursive: true, force: true });
  process.exit(0);
} catch (err) {
  console.error(`FAIL: ${err?.message ?? err}\nagent stderr:\n${stderr}`);
  child.kill("SIGKILL");
  process.exit(1);
}
