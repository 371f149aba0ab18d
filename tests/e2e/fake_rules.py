"""The request rules the fake API enforces, worded like the real services' 400 messages.

Each check returns None when the request is fine, or the error message (and for the Responses API an
error ``code``). These are the rules that converted, flipped or hand-edited history breaks in practice.
"""
from __future__ import annotations

from typing import Any

# Item types the Responses API accepts in ``input`` (the ones Codex can send, plus the documented rest).
RESPONSES_ITEM_TYPES = {
    "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
    "custom_tool_call_output", "local_shell_call", "local_shell_call_output", "web_search_call",
    "file_search_call", "computer_call", "computer_call_output", "image_generation_call",
    "code_interpreter_call", "mcp_call", "mcp_list_tools", "mcp_approval_request",
    "mcp_approval_response", "item_reference", "compaction", "tool_search_call", "tool_search_output",
    # sent by Codex 0.171.0 (code-mode tool namespaces and per-turn settings)
    "additional_tools", "configuration_update",
}
CALL_TYPES = {"function_call", "custom_tool_call", "local_shell_call", "tool_search_call"}
OUTPUT_TYPES = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}


def _blocks(message: dict) -> list[dict]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def check_anthropic(body: Any, signer) -> str | None:
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"]:
        return "messages: at least one message is required"
    # Claude Code 2.1.197 sends role "system" messages between turns; pairing rules skip them.
    msgs = [m for m in body["messages"] if isinstance(m, dict) and m.get("role") != "system"]
    if not msgs:
        return "messages: at least one user message is required"
    if msgs[0].get("role") != "user":
        return 'messages: first message must use the "user" role'
    seen: set[str] = set()
    for i, msg in enumerate(msgs):
        err = _check_message(i, msg, msgs, seen, signer)
        if err:
            return err
    return None


def _check_message(i: int, msg: dict, msgs: list[dict], seen: set[str], signer) -> str | None:
    blocks = _blocks(msg)
    if msg.get("role") == "assistant":
        for j, b in enumerate(blocks):
            err = _check_assistant_block(i, j, b, seen, signer)
            if err:
                return err
        ids = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
        if ids:
            nxt = msgs[i + 1] if i + 1 < len(msgs) else {}
            answered = {b.get("tool_use_id") for b in _blocks(nxt) if b.get("type") == "tool_result"}
            missing = [t for t in ids if t not in answered or nxt.get("role") != "user"]
            if missing:
                return (f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                        f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                        "`tool_result` block in the next message.")
        return None
    prev = msgs[i - 1] if i > 0 else {}
    offered = {b.get("id") for b in _blocks(prev) if b.get("type") == "tool_use"} if prev.get("role") == "assistant" else set()
    for j, b in enumerate(blocks):
        if b.get("type") == "tool_result" and b.get("tool_use_id") not in offered:
            return (f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{b.get('tool_use_id')}. Each `tool_result` block must have a corresponding `tool_use` "
                    "block in the previous message.")
    return None


def _check_assistant_block(i: int, j: int, b: dict, seen: set[str], signer) -> str | None:
    kind = b.get("type")
    if kind == "tool_use":
        if b.get("id") in seen:
            return f"messages.{i}.content.{j}: `tool_use` ids must be unique"
        seen.add(b.get("id"))
    elif kind == "thinking" and not signer.thinking_ok(b.get("thinking", ""), b.get("signature")):
        return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
    elif kind == "redacted_thinking" and not signer.redacted_ok(b.get("data")):
        return f"messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block"
    return None


def check_responses(body: Any, provider: str, signer) -> tuple[str | None, str | None]:
    if not isinstance(body, dict) or not isinstance(body.get("input"), list):
        return "Missing required parameter: 'input'.", "missing_required_parameter"
    calls: set[str] = set()
    for i, item in enumerate(body["input"]):
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind not in RESPONSES_ITEM_TYPES:
            return (f"Invalid value: '{kind}'. Supported values are: "
                    f"{', '.join(sorted(RESPONSES_ITEM_TYPES))}. (param input[{i}].type)"), "invalid_value"
        if kind in CALL_TYPES:
            calls.add(item.get("call_id"))
        elif kind in OUTPUT_TYPES and item.get("call_id") not in calls:
            return (f"No tool call found for function call output with call_id {item.get('call_id')}. "
                    f"(param input[{i}])"), None
        elif kind == "reasoning" and not signer.encrypted_ok(provider, item.get("encrypted_content")):
            return (f"The encrypted content for item {item.get('id')} could not be verified "
                    f"(invalid_encrypted_content; provider {provider}). (param input[{i}])"),\
                "invalid_encrypted_content"
    return None, None
