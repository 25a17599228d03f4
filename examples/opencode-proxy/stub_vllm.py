"""A scripted vLLM-like OpenAI-compatible server for the opencode example
(stdlib only), standing in for ``vllm serve`` so the example runs offline.

Its "tokenizer" is bytes: a token id is a UTF-8 byte (0-255) or one of a few
special tokens (256+), and the prompt is the request rendered as ChatML with
hermes-style tool calls. That is enough to behave like vLLM where the capture
cares: logprob entries are ``token_id:N`` when asked with
``return_tokens_as_token_ids``, ``prompt_token_ids`` / ``token_ids`` come back
when asked with ``return_token_ids``, answers stream as SSE (or plain JSON),
tool calls arrive as deltas, ``usage`` comes last when asked.

The script, per request (like the corpus stub): no tools → a title; tools and
no tool result yet → one ``bash`` call that writes hello.txt; otherwise → a
final text.

    python stub_vllm.py --port 0 --port-file stub.port [--log requests.jsonl] [--max-seconds 600]
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SPECIAL = {"<|im_start|>": 256, "<|im_end|>": 257, "<tool_call>": 258, "</tool_call>": 259}
MODEL = "stub-model"


def encode(text: str) -> list[int]:
    """Token ids of ``text``: special tokens whole, everything else byte by byte."""
    ids: list[int] = []
    i = 0
    while i < len(text):
        for tok, tid in SPECIAL.items():
            if text.startswith(tok, i):
                ids.append(tid)
                i += len(tok)
                break
        else:
            ids.extend(text[i].encode("utf-8"))
            i += 1
    return ids


def content_text(content) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def render_assistant(content: str, tool_calls) -> str:
    out = content or ""
    for tc in tool_calls or []:
        fn = tc.get("function") or {}
        out += '<tool_call>\n{"name": "' + fn.get("name", "") + '", "arguments": ' + (fn.get("arguments") or "{}") + "}\n</tool_call>"
    return out + "<|im_end|>"


def render_prompt(messages, tools) -> str:
    out = ""
    for k, m in enumerate(messages):
        role = m.get("role")
        if role == "assistant":
            out += "<|im_start|>assistant\n" + render_assistant(content_text(m.get("content")), m.get("tool_calls")) + "\n"
        elif role == "tool":
            out += "<|im_start|>tool\n<tool_response>\n" + content_text(m.get("content")) + "\n</tool_response><|im_end|>\n"
        else:
            text = content_text(m.get("content"))
            if k == 0 and role == "system" and tools:
                text += "\n# Tools\n<tools>" + "".join("\n" + json.dumps(t) for t in tools) + "\n</tools>"
            out += f"<|im_start|>{role}\n{text}<|im_end|>\n"
    return out + "<|im_start|>assistant\n"


def plan(body):
    msgs = body.get("messages") or []
    tools = body.get("tools") or []
    names = [(t.get("function") or {}).get("name") for t in tools]
    if not tools:
        return "Hello file", []
    if "bash" in names and not any(m.get("role") == "tool" for m in msgs):
        args = {"command": "echo hello-from-trajkit > hello.txt && cat hello.txt", "description": "Write hello.txt"}
        return "I will create the file.", [{"id": f"call_{int(time.time() * 1000) % 10**8:08d}", "type": "function",
                                            "function": {"name": "bash", "arguments": json.dumps(args)}}]
    return "Done: hello.txt contains hello-from-trajkit.", []


def logprob(tid: int, pos: int) -> float:
    return -round(0.001 * ((tid * 31 + pos) % 997), 4)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    log_path = os.devnull

    def log_message(self, *a):
        pass

    def _json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            return self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "stub"}]})
        return self._json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        with open(self.log_path, "a") as f:
            f.write(json.dumps({"path": self.path, "body": body}) + "\n")
        if not self.path.endswith("/chat/completions"):
            return self._json(404, {"error": {"message": "unsupported"}})
        content, tool_calls = plan(body)
        ids = encode(render_assistant(content, tool_calls))
        prompt_ids = encode(render_prompt(body.get("messages") or [], body.get("tools")))
        as_ids = bool(body.get("return_tokens_as_token_ids"))
        want_lp = bool(body.get("logprobs"))
        want_ids = bool(body.get("return_token_ids"))

        def entry(k, tid):
            token = f"token_id:{tid}" if as_ids else (bytes([tid]).decode("latin-1") if tid < 256 else "<special>")
            return {"token": token, "logprob": logprob(tid, k), "bytes": list(token.encode()), "top_logprobs": []}

        entries = [entry(k, t) for k, t in enumerate(ids)]
        finish = "tool_calls" if tool_calls else "stop"
        usage = {"prompt_tokens": len(prompt_ids), "completion_tokens": len(ids), "total_tokens": len(prompt_ids) + len(ids)}
        cid = f"chatcmpl-{int(time.time() * 1e6)}"
        if not body.get("stream"):
            msg = {"role": "assistant", "content": content or None}
            if tool_calls:
                msg["tool_calls"] = tool_calls
            ch = {"index": 0, "message": msg, "finish_reason": finish}
            if want_lp:
                ch["logprobs"] = {"content": entries}
            if want_ids:
                ch["token_ids"] = ids
            out = {"id": cid, "object": "chat.completion", "created": int(time.time()), "model": body.get("model"),
                   "choices": [ch], "usage": usage}
            if want_ids:
                out["prompt_token_ids"] = prompt_ids
            return self._json(200, out)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        base = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": body.get("model")}

        def send(choices, **top):
            self.wfile.write(("data: " + json.dumps(dict(base, choices=choices, **top)) + "\n\n").encode())
            self.wfile.flush()

        send([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
             **({"prompt_token_ids": prompt_ids} if want_ids else {}))
        n_content = len(encode(content))
        # content in one delta per 8 tokens, the tool call as a header then its arguments, like vLLM's hermes parser
        groups = [list(range(i, min(i + 8, n_content))) for i in range(0, n_content, 8)]
        rest = list(range(n_content, len(ids)))
        if tool_calls:
            groups += [rest[:1], rest[1:]]
        elif rest:
            groups.append(rest)
        for g, idx in enumerate(groups):
            if not idx:
                continue
            if idx[0] < n_content:
                delta = {"content": content.encode()[idx[0]:idx[-1] + 1].decode("utf-8", errors="replace")}
            elif tool_calls and idx[0] == n_content:
                tc = tool_calls[0]
                delta = {"tool_calls": [{"index": 0, "id": tc["id"], "type": "function",
                                         "function": {"name": tc["function"]["name"], "arguments": ""}}]}
            elif tool_calls:
                delta = {"tool_calls": [{"index": 0, "function": {"arguments": tool_calls[0]["function"]["arguments"]}}]}
            else:
                delta = {}
            ch = {"index": 0, "delta": delta, "finish_reason": None}
            if want_lp:
                ch["logprobs"] = {"content": [entries[i] for i in idx]}
            if want_ids:
                ch["token_ids"] = [ids[i] for i in idx]
            send([ch])
        send([{"index": 0, "delta": {}, "finish_reason": finish}])
        if (body.get("stream_options") or {}).get("include_usage"):
            send([], usage=usage)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", default=None, help="write the port here once listening")
    ap.add_argument("--log", default=os.devnull, help="append every request body here (JSONL)")
    ap.add_argument("--max-seconds", type=float, default=600, help="exit by itself after this long")
    args = ap.parse_args(argv)
    Handler.log_path = args.log
    ThreadingHTTPServer.request_queue_size = 256  # many agents at once
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    srv.daemon_threads = True
    threading.Timer(args.max_seconds, srv.shutdown).start()
    port = srv.server_address[1]
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(args.port_file + ".tmp", args.port_file)
    print(f"stub_vllm: listening on http://127.0.0.1:{port}/v1", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
