// Preloaded (node --require) into server-everything's streamable HTTP transport by the
// agent-mcp tests: it makes the server listen on 127.0.0.1 (PORT=0 picks a free port) and
// prints the port it got, which the server itself does not report.
const http = require("node:http");
const listen = http.Server.prototype.listen;
http.Server.prototype.listen = function (...args) {
  this.once("listening", () => {
    process.stderr.write(`AGENT_MCP_TEST_PORT=${this.address().port}\n`);
  });
  if (args.length >= 1 && (typeof args[0] === "number" || typeof args[0] === "string")) {
    const port = args[0];
    const rest = args.slice(1).filter((a) => typeof a === "function");
    return listen.call(this, Number(port), "127.0.0.1", ...rest);
  }
  return listen.apply(this, args);
};
