// End-to-end test of `adapter-acp acp` through the official ACP client SDK
// (@agentclientprotocol/sdk). Usage: node test.mjs <path to the adapter-acp binary>
//
// Scenarios (scripted provider, offline):
//  1. initialize: protocol version 1, agent info, loadSession, image + embedded context.
//  2. session/new, then a prompt that streams thought and text, calls `bash echo hi` (which
//     asks permission under the default `build` mode), is allowed, and ends with end_turn.
//  3. a prompt on a slow turn cancelled mid-stream with session/cancel -> `cancelled`.
//  4. a second session whose permission request is rejected -> the call fails, end_turn.
//  5. a third session cancelled while its permission request is open -> `cancelled`, and
//     the request is withdrawn.
//  6. a fresh process loads session 1 and replays its messages; set_mode works and rejects
//     unknown modes.
//  7. (with $ACP_TEST_OAUTH_MCP, an MCP server behind OAuth) a client that advertises form
//     elicitation but not url gets no elicitation/create: the authorization URL goes to
//     $BROWSER as before (tests/acp_node.rs checks the login completed).
//
// Every wait is bounded; the process exits non-zero on the first failure.

import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import assert from "node:assert/strict";
import * as acp from "@agentclientprotocol/sdk";
import { STEP_TIMEOUT_MS, deferred, limitTotal, within } from "./harness.mjs";

const BIN = process.argv[2];
/** The URL of an MCP server behind OAuth (test-support's), for scenario 7. */
const OAUTH_MCP = process.env.ACP_TEST_OAUTH_MCP;
if (!BIN) {
  console.error("usage: node test.mjs <adapter-acp binary>");
  process.exit(2);
}

limitTotal(120_000);

const root = mkdtempSync(join(tmpdir(), "acp-node-"));
const workspace = join(root, "ws");
const dataDir = join(root, "data");
mkdirSync(workspace);
mkdirSync(dataDir);

// Each session plays the script from the start (one provider per session).
const script = {
  model: "scripted-acp",
  turns: [
    {
      steps: [
        { reasoning: "The user wants a greeting. " },
        { reasoning: "I will run echo." },
        { text: "Let me run a command." },
        { tool_call: { id: "call_echo", name: "bash", args: ['{"command":', ' "echo hi"}'] } },
        { usage: { input: 100, output: 20 } },
      ],
    },
    { steps: [{ text: "The command " }, { text: "finished." }, { usage: { input: 150, output: 5 } }] },
    { steps: [{ text: "Starting a long answer" }, { delay_ms: 60000 }, { text: " that never ends." }] },
  ],
};
const scriptPath = join(root, "script.json");
writeFileSync(scriptPath, JSON.stringify(script));

// A 1x1 transparent PNG.
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/** One agent process plus an ACP client connection to it. */
function start() {
  const child = spawn(
    BIN,
    ["acp", "--provider", "scripted", "--script", scriptPath, "--data-dir", dataDir],
    { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ADAPTER_ACP_LOG: "warn" } },
  );
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

  const state = {
    updates: [], // [{sessionId, update}]
    permissions: [], // {params, answered, withdrawn}
    onPermission: null, // async ({params, signal}) => response
    onUpdate: null, // (notification, agent) => void
    announcedBeforeAsk: [],
    elicitations: [],
  };

  const app = acp
    .client({ name: "adapter-acp-node-test" })
    .onRequest(acp.methods.client.session.requestPermission, async ({ params, signal }) => {
      const announced = state.updates.some(
        (u) =>
          u.sessionId === params.sessionId &&
          u.update.sessionUpdate === "tool_call" &&
          u.update.toolCallId === params.toolCall.toolCallId,
      );
      state.announcedBeforeAsk.push(announced);
      const record = { params };
      record.withdrawn = new Promise((resolve) => {
        if (signal?.aborted) resolve();
        signal?.addEventListener("abort", () => resolve());
      });
      state.permissions.push(record);
      if (!state.onPermission) throw new Error("unexpected permission request");
      return state.onPermission({ params, signal, record });
    })
    .onNotification(acp.methods.client.session.update, async ({ params, agent }) => {
      state.updates.push({ sessionId: params.sessionId, update: params.update });
      if (state.onUpdate) state.onUpdate(params, agent);
    })
    .onRequest(acp.methods.client.elicitation.create, async ({ params }) => {
      state.elicitations.push(params);
      throw new Error("unexpected elicitation");
    });

  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const stop = async () => {
    child.stdin.end();
    const exit = await within(exited, "agent exit after stdin closed").catch((e) => {
      child.kill("SIGKILL");
      throw e;
    });
    return exit;
  };
  return { app, stream, state, child, stop, stderr: () => stderr };
}

function updatesOf(state, sessionId, from = 0) {
  return state.updates.slice(from).filter((u) => u.sessionId === sessionId).map((u) => u.update);
}

function kinds(updates) {
  return updates.map((u) => u.sessionUpdate);
}

function text(updates, kind) {
  return updates
    .filter((u) => u.sessionUpdate === kind && u.content?.type === "text")
    .map((u) => u.content.text)
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

let firstSessionId;

async function firstProcess() {
  const agent = start();
  const { state } = agent;
  try {
    await agent.app.connectWith(agent.stream, async (ctx) => {
      await scenario("initialize", async () => {
        const init = await within(
          ctx.request(acp.methods.agent.initialize, {
            protocolVersion: acp.PROTOCOL_VERSION,
            clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
          }),
          "initialize",
        );
        assert.equal(init.protocolVersion, 1);
        assert.equal(init.agentInfo?.name, "adapter-acp");
        assert.ok(init.agentInfo?.version, "agent version");
        assert.equal(init.agentCapabilities?.loadSession, true);
        assert.equal(init.agentCapabilities?.promptCapabilities?.image, true);
        assert.equal(init.agentCapabilities?.promptCapabilities?.embeddedContext, true);
        // stdio MCP servers always; streamable HTTP ones too.
        assert.equal(init.agentCapabilities?.mcpCapabilities?.http, true);
      });

      let sessionId;
      await scenario("new session, prompt with an allowed permission, end_turn", async () => {
        const created = await within(
          ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] }),
          "session/new",
        );
        sessionId = created.sessionId;
        firstSessionId = sessionId;
        assert.ok(sessionId);
        assert.equal(created.modes?.currentModeId, "build");
        const modeIds = created.modes.availableModes.map((m) => m.id);
        for (const id of ["build", "edit", "auto", "plan", "yolo"]) assert.ok(modeIds.includes(id), id);

        state.onPermission = async ({ params }) => {
          const ids = params.options.map((o) => o.optionId);
          assert.deepEqual(ids, ["allow_once", "allow_always", "reject_once"]);
          assert.deepEqual(
            params.options.map((o) => o.kind),
            ["allow_once", "allow_always", "reject_once"],
          );
          return { outcome: { outcome: "selected", optionId: "allow_once" } };
        };
        const before = state.updates.length;
        const response = await within(
          ctx.request(acp.methods.agent.session.prompt, {
            sessionId,
            prompt: [
              { type: "text", text: "Say hi with a command." },
              { type: "image", mimeType: "image/png", data: PNG },
              {
                type: "resource",
                resource: { uri: "file:///notes.txt", text: "some context", mimeType: "text/plain" },
              },
            ],
          }),
          "session/prompt (allow)",
        );
        assert.equal(response.stopReason, "end_turn");
        assert.ok(response._meta?.usage, "usage in _meta");

        const updates = updatesOf(state, sessionId, before);
        assert.equal(text(updates, "agent_thought_chunk"), "The user wants a greeting. I will run echo.");
        assert.equal(
          text(updates, "agent_message_chunk"),
          "Let me run a command.The command finished.",
        );
        const call = updates.find((u) => u.sessionUpdate === "tool_call");
        assert.ok(call, "a tool_call update");
        assert.equal(call.toolCallId, "call_echo");
        assert.equal(call.kind, "execute");
        assert.equal(call.status ?? "pending", "pending");
        assert.deepEqual(call.rawInput, { command: "echo hi" });

        assert.equal(state.permissions.length, 1, "one permission request");
        const asked = state.permissions[0].params;
        assert.equal(asked.sessionId, sessionId);
        assert.equal(asked.toolCall.toolCallId, "call_echo");
        assert.equal(asked.toolCall.kind, "execute");
        assert.deepEqual(state.announcedBeforeAsk, [true], "tool_call sent before the permission request");

        const callUpdates = updates.filter(
          (u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "call_echo",
        );
        const statuses = callUpdates.map((u) => u.status).filter(Boolean);
        assert.equal(statuses[0], "in_progress");
        assert.equal(statuses.at(-1), "completed");
        const final = callUpdates.filter((u) => u.status === "completed").at(-1);
        const output = (final.content ?? [])
          .map((c) => (c.type === "content" && c.content.type === "text" ? c.content.text : ""))
          .join("");
        assert.match(output, /hi/);
        assert.ok(kinds(updates).includes("usage_update"), "usage_update sent");
        // The order of the stream: thought, text, the call, its updates, the answer.
        const order = kinds(updates).filter((k) => k !== "usage_update");
        assert.ok(order.indexOf("agent_thought_chunk") < order.indexOf("tool_call"));
        assert.ok(order.indexOf("tool_call") < order.indexOf("tool_call_update"));
        assert.equal(order.at(-1), "agent_message_chunk");
      });

      await scenario("cancel during a running prompt returns cancelled", async () => {
        const before = state.updates.length;
        const streaming = deferred();
        state.onUpdate = (params) => {
          if (params.sessionId === sessionId && params.update.sessionUpdate === "agent_message_chunk") {
            streaming.resolve();
          }
        };
        const prompt = ctx.request(acp.methods.agent.session.prompt, {
          sessionId,
          prompt: [{ type: "text", text: "Write a long answer." }],
        });
        await within(streaming.promise, "the slow turn starts streaming");
        await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
        const response = await within(prompt, "session/prompt after cancel");
        assert.equal(response.stopReason, "cancelled");
        state.onUpdate = null;
        const streamed = text(updatesOf(state, sessionId, before), "agent_message_chunk");
        assert.equal(streamed, "Starting a long answer");
      });

      await scenario("a rejected permission fails the call; the turn ends with end_turn", async () => {
        const created = await within(
          ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] }),
          "session/new (2)",
        );
        const second = created.sessionId;
        assert.notEqual(second, sessionId);
        state.onPermission = async () => ({ outcome: { outcome: "selected", optionId: "reject_once" } });
        const before = state.updates.length;
        const asked = state.permissions.length;
        const response = await within(
          ctx.request(acp.methods.agent.session.prompt, {
            sessionId: second,
            prompt: [{ type: "text", text: "Say hi with a command." }],
          }),
          "session/prompt (reject)",
        );
        assert.equal(response.stopReason, "end_turn");
        assert.equal(state.permissions.length, asked + 1);
        const updates = updatesOf(state, second, before);
        const statuses = updates
          .filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "call_echo")
          .map((u) => u.status)
          .filter(Boolean);
        assert.deepEqual(statuses, ["failed"], "the rejected call never runs");
      });

      await scenario("cancel while a permission request is open returns cancelled", async () => {
        const created = await within(
          ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] }),
          "session/new (3)",
        );
        const third = created.sessionId;
        const asked = deferred();
        const released = deferred();
        state.onPermission = async ({ signal, record }) => {
          asked.resolve(record);
          // Wait until the agent withdraws the request or the test releases it.
          await new Promise((resolve) => {
            if (signal?.aborted) return resolve();
            signal?.addEventListener("abort", resolve);
            released.promise.then(resolve);
          });
          return { outcome: { outcome: "cancelled" } };
        };
        const prompt = ctx.request(acp.methods.agent.session.prompt, {
          sessionId: third,
          prompt: [{ type: "text", text: "Say hi with a command." }],
        });
        const record = await within(asked.promise, "the permission request arrives");
        await ctx.notify(acp.methods.agent.session.cancel, { sessionId: third });
        const response = await within(prompt, "session/prompt cancelled during permission");
        assert.equal(response.stopReason, "cancelled");
        released.resolve();
        const statuses = updatesOf(state, third)
          .filter((u) => u.sessionUpdate === "tool_call_update")
          .map((u) => u.status)
          .filter(Boolean);
        assert.ok(!statuses.includes("completed"), "the cancelled call did not run");
        assert.ok(!statuses.includes("in_progress"), "the cancelled call did not start");
        // The agent withdrew the open request with $/cancel_request.
        await within(record.withdrawn, "the permission request is withdrawn", 5_000);
      });

      await scenario("set_mode and errors", async () => {
        await within(
          ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "plan" }),
          "set_mode plan",
        );
        await assert.rejects(
          within(ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "nonsense" }), "bad mode"),
          (err) => err?.code === -32602,
        );
        await assert.rejects(
          within(
            ctx.request(acp.methods.agent.session.prompt, {
              sessionId: "sess_missing",
              prompt: [{ type: "text", text: "hi" }],
            }),
            "prompt to an unknown session",
          ),
          (err) => typeof err?.code === "number",
        );
        await within(
          ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: "build" }),
          "set_mode build",
        );
      });
    });
  } finally {
    const exit = await agent.stop().catch((e) => ({ error: e }));
    if (failures) console.error(`agent stderr:\n${agent.stderr()}`);
    if (exit?.error) throw exit.error;
  }
}

async function secondProcess() {
  const agent = start();
  const { state } = agent;
  try {
    await agent.app.connectWith(agent.stream, async (ctx) => {
      await within(
        ctx.request(acp.methods.agent.initialize, {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: { elicitation: { form: {} } },
        }),
        "initialize (2)",
      );
      await scenario("load replays the earlier session", async () => {
        const loaded = await within(
          ctx.request(acp.methods.agent.session.load, { sessionId: firstSessionId, cwd: workspace, mcpServers: [] }),
          "session/load",
        );
        assert.equal(loaded?.modes?.currentModeId, "build");
        // Replayed notifications arrive before the response.
        const updates = updatesOf(state, firstSessionId);
        const user = text(updates, "user_message_chunk");
        assert.match(user, /Say hi with a command\./);
        assert.match(user, /Write a long answer\./);
        assert.ok(
          updates.some((u) => u.sessionUpdate === "user_message_chunk" && u.content?.type === "image"),
          "the image is replayed",
        );
        assert.match(text(updates, "agent_message_chunk"), /The command finished\./);
        assert.match(text(updates, "agent_thought_chunk"), /I will run echo\./);
        const call = updates.find((u) => u.sessionUpdate === "tool_call");
        assert.equal(call?.toolCallId, "call_echo");
        assert.equal(call?.kind, "execute");
        const result = updates.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "call_echo");
        assert.equal(result?.status, "completed");
        const k = kinds(updates);
        assert.ok(k.indexOf("user_message_chunk") < k.indexOf("tool_call"));
        assert.ok(k.indexOf("tool_call") < k.indexOf("tool_call_update"));
      });

      await scenario("a loaded session takes prompts; unknown sessions do not load", async () => {
        await assert.rejects(
          within(
            ctx.request(acp.methods.agent.session.load, { sessionId: "sess_nope", cwd: workspace, mcpServers: [] }),
            "load unknown",
          ),
          (err) => typeof err?.code === "number",
        );
        const list = await within(ctx.request(acp.methods.agent.session.list, {}), "session/list");
        assert.ok(list.sessions.some((s) => s.sessionId === firstSessionId), "listed");
        await within(
          ctx.request(acp.methods.agent.session.setMode, { sessionId: firstSessionId, modeId: "yolo" }),
          "set_mode yolo",
        );
      });

      if (OAUTH_MCP) {
        await scenario("without elicitation.url an MCP server's authorization URL goes to $BROWSER", async () => {
          const created = await within(
            ctx.request(acp.methods.agent.session.new, {
              cwd: workspace,
              mcpServers: [{ type: "http", name: "docs", url: OAUTH_MCP, headers: [] }],
            }),
            "session/new (OAuth server)",
          );
          assert.ok(created.sessionId);
          assert.equal(state.elicitations.length, 0, "no elicitation/create");
        });
      } else {
        console.log("skipped: the MCP authorization URL scenario (no ACP_TEST_OAUTH_MCP)");
      }
    });
  } finally {
    const exit = await agent.stop().catch((e) => ({ error: e }));
    if (failures) console.error(`agent stderr:\n${agent.stderr()}`);
    if (exit?.error) throw exit.error;
  }
}

try {
  await firstProcess();
  await secondProcess();
  console.log("all ACP scenarios passed");
  rmSync(root, { recursive: true, force: true });
  process.exit(0);
} catch (err) {
  console.error(`FAIL: ${err?.message ?? err}`);
  process.exit(1);
}
