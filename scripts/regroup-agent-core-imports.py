#!/usr/bin/env python3
"""Rewrites `agent_core::Name` paths to the module each name now lives in (issue 27.5:
agent-core keeps only a newcomer's names at its root). Idempotent: run it on a tree merged
from an older branch, then `cargo fmt`.

    scripts/regroup-agent-core-imports.py [paths...]   (default: the whole workspace)
"""
import os
import re
import sys

MOVED = {
    "event": "CompactionReason ErrorCode PermissionInfo RecoveryReason RequestScope RunKind "
             "StopReason ToolStatus",
    "hooks": "CompactTrigger HookContext HookEvent HookList HookOutcome HookReport Hooks "
             "PromptDecision ResultDecision SessionEnd SessionEndReason SessionSource "
             "StartDecision StopDecision StopRequest ToolDecision",
    "message": "Role ToolCall",
    "context": "parse_context_window AutoCompact ContextTracker ContextUsage",
    "notes": "note_tool",
    "permission": "decide Approval ApprovalRequest Assessment Block BlockCode PermissionAction "
                  "Risk RiskCategory RiskLevel Verdict",
    "provider": "ModelInfo OutputSchema Pricing ProviderError ProviderErrorKind ProviderEvent "
                "ProviderRequest ProviderStop ProviderStream ToolSpec",
    "sandbox": "NetworkAccess SandboxContext SandboxEscalation SandboxFallback SandboxMode "
               "SandboxPolicy SandboxReport SandboxSupport",
    "schema": "SchemaError StrictSchema",
    "secrets": "register_secret",
    "session": "MemorySessionStore SessionError SessionRecord SessionStore",
    "spill": "OutputBudget",
    "structured": "parse_answer OutputSpec",
    "subagent": "new_task_id AgentTool BackgroundChild ChildSnapshot ParentRun SubagentError "
                "SubagentInfo SubagentOutcome SubagentRequest MAX_SUBAGENT_DEPTH",
    "tool": "PlanItem PlanStatus PlanUpdate Progress ProgressReceiver ProgressSink "
            "ProgressStream FnTool",
    "tool_source": "ToolSource",
    "compaction": "COMPACTION_PREFIX",
}
MODULE = {name: module for module, names in MOVED.items() for name in names.split()}
NAMES = "|".join(sorted(MODULE, key=len, reverse=True))


def split_items(body):
    """Top-level comma-separated items of a brace group (nested braces kept whole)."""
    items, depth, cur = [], 0, ""
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    return [i for i in (re.sub(r"\s+", " ", i).strip() for i in items) if i]


def regroup(body, prefix):
    """Rewrites the items of `{root}::{...}`."""
    clean = re.sub(r"^[ \t]*(//[/!]|#)?[ \t]?", "", body, flags=re.M) if prefix else body
    keep, moved = [], {}
    for item in split_items(clean):
        name = item.split(" as ")[0].strip()
        if name in MODULE:
            moved.setdefault(MODULE[name], []).append(item)
        else:
            keep.append(item)
    if not moved:
        return None
    for module, items in moved.items():
        keep.append(f"{module}::{items[0]}" if len(items) == 1 else
                    f"{module}::{{{', '.join(items)}}}")
    return ", ".join(keep)


def rewrite(text, root):
    out, pos = [], 0
    pattern = re.compile(r"(?<![\w$])" + re.escape(root) + r"::\{")
    while True:
        m = pattern.search(text, pos)
        if not m:
            out.append(text[pos:])
            break
        start = m.end()
        depth, i = 1, start
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        body = text[start:i - 1]
        line_start = text.rfind("\n", 0, m.start()) + 1
        prefix = re.match(r"[ \t]*(//[/!]|#)?", text[line_start:m.start()]).group(1)
        new = regroup(body, prefix)
        if new is None:
            out.append(text[pos:i])
        elif len(split_items(new)) == 1:
            out.append(text[pos:m.start()] + root + "::" + new)
        else:
            out.append(text[pos:start] + new + "}")
        pos = i
    text = "".join(out)
    # Paths outside brace groups: `agent_core::Name`.
    return re.sub(r"(?<![\w$])" + re.escape(root) + r"::(" + NAMES + r")\b",
                  lambda m: f"{root}::{MODULE[m.group(1)]}::{m.group(1)}", text)


def main():
    paths = sys.argv[1:] or ["."]
    for top in paths:
        for dirpath, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d not in ("target", ".git", "node_modules")]
            for f in files:
                if not f.endswith((".rs", ".md")):
                    continue
                path = os.path.join(dirpath, f)
                text = open(path, encoding="utf-8").read()
                new = rewrite(text, "agent_core")
                if path.startswith("./agent-core/src/") or "/agent-core/src/" in path:
                    new = rewrite(new, "crate")
                if new != text:
                    open(path, "w", encoding="utf-8").write(new)
                    print(path)


if __name__ == "__main__":
    main()
