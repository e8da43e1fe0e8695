// A minimal stdio MCP server for adapter-rpc's list_changed test (newline-delimited
// JSON-RPC, no dependencies): it offers `grow`, which adds the tool `extra` and announces
// it with notifications/tools/list_changed.
const readline = require("node:readline");

let grown = false;
const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");
const tool = (name, description) => ({
  name,
  description,
  inputSchema: { type: "object", properties: {} },
  annotations: { readOnlyHint: true },
});

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return;
  }
  const { id, method, params } = message;
  if (id === undefined) return; // a notification
  switch (method) {
    case "initialize":
      send({
        jsonrpc: "2.0",
        id,
        result: {
          protocolVersion: params.protocolVersion,
          capabilities: { tools: { listChanged: true } },
          serverInfo: { name: "list-changed-fixture", version: "1.0.0" },
        },
      });
      break;
    case "ping":
      send({ jsonrpc: "2.0", id, result: {} });
      break;
    case "tools/list": {
      const tools = [tool("grow", "Adds the tool `extra`.")];
      if (grown) tools.push(tool("extra", "Appeared after grow."));
      send({ jsonrpc: "2.0", id, result: { tools } });
      break;
    }
    case "tools/call":
      if (params.name === "grow") {
        grown = true;
        send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
        send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "grown" }] } });
      } else if (params.name === "extra" && grown) {
        send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: "extra called" }] } });
      } else {
        send({ jsonrpc: "2.0", id, error: { code: -32602, message: `unknown tool ${params.name}` } });
      }
      break;
    default:
      send({ jsonrpc: "2.0", id, error: { code: -32601, message: `no method ${method}` } });
  }
});
