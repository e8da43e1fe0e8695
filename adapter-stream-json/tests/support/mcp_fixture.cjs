// A small stdio MCP server for the exec tests (newline-delimited JSON-RPC, node only):
// `whoami` answers with the server's pid (to check no server outlives exec), `grow` adds
// the tool `extra` and announces it with notifications/tools/list_changed.
const readline = require("node:readline");

let grown = false;
const reply = (id, result) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, result }) + "\n");
const fail = (id, code, message) =>
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, error: { code, message } }) + "\n");
const text = (id, value) => reply(id, { content: [{ type: "text", text: value }] });
const tool = (name, description) => ({
  name,
  description,
  inputSchema: { type: "object", properties: {} },
  annotations: { readOnlyHint: true },
});

const tools = () => {
  const list = [tool("whoami", "The server's pid."), tool("grow", "Adds the tool `extra`.")];
  if (grown) list.push(tool("extra", "Offered after grow."));
  return list;
};

const calls = {
  whoami: (id) => text(id, `pid ${process.pid}`),
  grow: (id) => {
    grown = true;
    process.stdout.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/tools/list_changed" }) + "\n");
    text(id, "grown");
  },
  extra: (id) => (grown ? text(id, "extra here") : fail(id, -32602, "no tool extra yet")),
};

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return;
  }
  const { id, method, params } = message;
  if (id === undefined) return;
  if (method === "initialize") {
    reply(id, {
      protocolVersion: params.protocolVersion,
      capabilities: { tools: { listChanged: true } },
      serverInfo: { name: "exec-fixture", version: "1.0.0" },
    });
  } else if (method === "ping") {
    reply(id, {});
  } else if (method === "tools/list") {
    reply(id, { tools: tools() });
  } else if (method === "tools/call" && calls[params.name]) {
    calls[params.name](id);
  } else {
    fail(id, -32601, `unknown ${method} ${params && params.name}`);
  }
});
