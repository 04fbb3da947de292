#!/usr/bin/env python3
"""Integration tests of the models over HTTP, against tests/mock_llm.py.

Each test starts the mock server (127.0.0.1 only) with a script of turns,
runs the model_probe driver with a model config and a message list, and
checks the probe's events and the requests the mock recorded.

    model_http_test.py --probe PATH/model_probe --mock PATH/mock_llm.py [unittest args]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

PROBE = None
MOCK = None
KEY = "sk-test-SECRET-0123456789"
ANTHROPIC_KEY = "sk-ant-test-SECRET-abcdef"

BASE_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Please list the files.", "extra": {"note": "not sent"}},
]


class Mock:
    def __init__(self, turns):
        self.dir = tempfile.TemporaryDirectory(prefix="mock_llm.")
        self.script = os.path.join(self.dir.name, "script.json")
        self.record = os.path.join(self.dir.name, "requests.jsonl")
        with open(self.script, "w") as f:
            json.dump({"turns": turns}, f)
        self.proc = subprocess.Popen([sys.executable, MOCK, "--script", self.script, "--record", self.record],
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.strip():
            raise RuntimeError("mock server did not start")
        self.port = int(line)
        self.url = f"http://127.0.0.1:{self.port}"

    def requests(self):
        if not os.path.exists(self.record):
            return []
        with open(self.record) as f:
            return [json.loads(line) for line in f if line.strip()]

    def close(self):
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        self.dir.cleanup()


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.lower().endswith("_proxy")
           and not k.startswith("MSWEA_")
           and k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "OPENAI_BASE_URL",
                         "ANTHROPIC_BASE_URL", "LITELLM_MODEL_REGISTRY_PATH", "MINI_RETRY_BASE_MS")}
    env["MINI_RETRY_BASE_MS"] = "10"
    env.update({k: v for k, v in extra.items() if v is not None})
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
    return env


def run_probe(config, messages=None, steps=1, env=None, cls=None, extra_args=()):
    with tempfile.TemporaryDirectory(prefix="probe.") as d:
        cfg_path = os.path.join(d, "model.json")
        msg_path = os.path.join(d, "messages.json")
        with open(cfg_path, "w") as f:
            json.dump(config, f)
        with open(msg_path, "w") as f:
            json.dump(messages if messages is not None else BASE_MESSAGES, f)
        args = [PROBE, "--steps", str(steps)]
        if cls:
            args += ["--class", cls]
        args += list(extra_args) + [cfg_path, msg_path]
        p = subprocess.run(args, env=env or clean_env(), capture_output=True, text=True, timeout=120)
    events = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    return p.returncode, events, p.stdout + p.stderr


def by_event(events, name):
    return [e for e in events if e["event"] == name]


def sent_messages(request):
    return request["body"]["messages"]


class Base(unittest.TestCase):
    def mock(self, turns):
        m = Mock(turns)
        self.addCleanup(m.close)
        return m

    def assertNoKey(self, text, key=KEY):
        self.assertNotIn(key, text)


class OpenAIToolCalls(Base):
    def test_one_then_three_calls(self):
        m = self.mock([
            {"text": "Let me look.", "tool_calls": [{"command": "ls -la"}], "usage": {"input": 100, "output": 20}},
            {"tool_calls": [{"command": "echo a"}, {"command": "echo b"}, {"command": "echo c"}],
             "usage": {"input": 200, "output": 30, "cached": 50}},
            {"text": "done", "tool_calls": [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}],
             "usage": {"input": 300, "output": 10}},
        ])
        cfg = {"model_name": "openai/gpt-4o-mini", "model_kwargs": {"api_base": m.url + "/v1", "temperature": 0,
                                                                      "drop_params": True}}
        rc, ev, out = run_probe(cfg, steps=3, env=clean_env(OPENAI_API_KEY=KEY))
        self.assertEqual(rc, 0, out)
        asst = by_event(ev, "assistant")
        obs = by_event(ev, "observations")
        self.assertEqual(len(asst), 3)
        a1 = asst[0]["message"]
        self.assertEqual(a1["role"], "assistant")
        self.assertEqual(a1["content"], "Let me look.")
        self.assertEqual(a1["extra"]["actions"], [{"command": "ls -la", "tool_call_id": "call_0_0"}])
        self.assertEqual(a1["tool_calls"][0]["function"]["name"], "bash")
        self.assertEqual(a1["extra"]["response"]["id"], "chatcmpl-mock0")
        self.assertIn("timestamp", a1["extra"])
        # gpt-4o-mini: $0.15 / $0.60 per 1M, cached $0.075
        self.assertAlmostEqual(a1["extra"]["cost"], 100 * 0.15e-6 + 20 * 0.60e-6, places=12)
        o1 = obs[0]["messages"]
        self.assertEqual(len(o1), 1)
        self.assertEqual(o1[0]["role"], "tool")
        self.assertEqual(o1[0]["tool_call_id"], "call_0_0")
        self.assertEqual(o1[0]["content"], "<returncode>0</returncode>\n<output>\nran: ls -la\n</output>")
        self.assertEqual(o1[0]["extra"]["raw_output"], "ran: ls -la\n")
        self.assertEqual(o1[0]["extra"]["returncode"], 0)
        a2 = asst[1]["message"]
        self.assertEqual([a["command"] for a in a2["extra"]["actions"]], ["echo a", "echo b", "echo c"])
        self.assertEqual([a["tool_call_id"] for a in a2["extra"]["actions"]], ["call_1_0", "call_1_1", "call_1_2"])
        self.assertEqual([o["tool_call_id"] for o in obs[1]["messages"]], ["call_1_0", "call_1_1", "call_1_2"])
        self.assertAlmostEqual(a2["extra"]["cost"], 200 * 0.15e-6 + 50 * 0.075e-6 + 30 * 0.60e-6, places=12)

        reqs = m.requests()
        self.assertEqual(len(reqs), 3)
        r0 = reqs[0]
        self.assertEqual(r0["path"], "/v1/chat/completions")
        self.assertEqual(r0["headers"]["authorization"], "Bearer " + KEY)
        self.assertEqual(r0["headers"]["content-type"], "application/json")
        b0 = r0["body"]
        self.assertEqual(b0["model"], "gpt-4o-mini")          # provider prefix not sent
        self.assertEqual(b0["temperature"], 0)
        self.assertNotIn("drop_params", b0)
        self.assertNotIn("api_base", b0)
        self.assertEqual(b0["tools"][0]["function"]["name"], "bash")
        self.assertEqual(b0["tools"][0]["function"]["parameters"]["required"], ["command"])
        self.assertEqual(sent_messages(r0), [{"role": "system", "content": "You are a helpful assistant."},
                                             {"role": "user", "content": "Please list the files."}])
        # second request: the assistant's tool call and its tool result, no "extra"
        msgs = sent_messages(reqs[1])
        self.assertEqual(len(msgs), 4)
        self.assertEqual(msgs[2]["role"], "assistant")
        self.assertEqual(msgs[2]["tool_calls"][0]["id"], "call_0_0")
        self.assertNotIn("extra", msgs[2])
        self.assertEqual(msgs[3], {"role": "tool", "content": o1[0]["content"], "tool_call_id": "call_0_0"})
        msgs = sent_messages(reqs[2])
        self.assertEqual([x["role"] for x in msgs[-4:]], ["assistant", "tool", "tool", "tool"])
        self.assertEqual([x["tool_call_id"] for x in msgs[-3:]], ["call_1_0", "call_1_1", "call_1_2"])

        stats = by_event(ev, "stats")[0]
        self.assertEqual(stats["calls"], 3)
        self.assertEqual(stats["class"], "openai")
        self.assertAlmostEqual(stats["cost"], sum(a["message"]["extra"]["cost"] for a in asst), places=12)
        self.assertEqual(stats["serialize"]["info"]["config"]["model"]["model_name"], "openai/gpt-4o-mini")
        self.assertNoKey(out)

    def test_key_in_config_is_redacted(self):
        m = self.mock([{"tool_calls": [{"command": "true"}], "usage": {"input": 1, "output": 1}}])
        cfg = {"model_name": "gpt-4o", "model_kwargs": {"api_base": m.url + "/v1", "api_key": KEY}}
        rc, ev, out = run_probe(cfg)
        self.assertEqual(rc, 0, out)
        self.assertEqual(m.requests()[0]["headers"]["authorization"], "Bearer " + KEY)
        self.assertNotIn("api_key", m.requests()[0]["body"])
        stats = by_event(ev, "stats")[0]
        self.assertEqual(stats["template_vars"]["model_kwargs"]["api_key"], "***")
        self.assertNoKey(out)

    def test_base_url_from_environment(self):
        m = self.mock([{"tool_calls": [{"command": "pwd"}], "usage": {"input": 10, "output": 1}}])
        cfg = {"model_name": "gpt-4o"}
        rc, ev, out = run_probe(cfg, env=clean_env(OPENAI_API_KEY=KEY, OPENAI_BASE_URL=m.url + "/v1/"))
        self.assertEqual(rc, 0, out)
        self.assertEqual(m.requests()[0]["path"], "/v1/chat/completions")
        self.assertEqual(m.requests()[0]["body"]["model"], "gpt-4o")

    def test_api_base_in_config_wins_over_environment(self):
        m = self.mock([{"tool_calls": [{"command": "pwd"}], "usage": {"input": 10, "output": 1}}])
        cfg = {"model_name": "gpt-4o", "model_kwargs": {"api_base": m.url + "/v1"}}
        rc, ev, out = run_probe(cfg, env=clean_env(OPENAI_API_KEY=KEY, OPENAI_BASE_URL="http://127.0.0.1:9/v1"))
        self.assertEqual(rc, 0, out)
        self.assertEqual(len(m.requests()), 1)

    def test_no_tool_call_is_a_format_error(self):
        m = self.mock([{"text": "I am thinking.", "usage": {"input": 10, "output": 5}},
                       {"tool_calls": [{"name": "python", "arguments": "{\"code\": 1}"}], "usage": {"input": 10, "output": 5}},
                       {"tool_calls": [{"name": "bash", "arguments": "{not json"}], "usage": {"input": 10, "output": 5}},
                       {"tool_calls": [{"command": "ls"}], "usage": {"input": 10, "output": 5}}])
        cfg = {"model_name": "gpt-4o", "model_kwargs": {"api_base": m.url + "/v1"}}
        rc, ev, out = run_probe(cfg, steps=4, env=clean_env(OPENAI_API_KEY=KEY))
        self.assertEqual(rc, 0, out)
        fe = by_event(ev, "format_error")
        self.assertEqual(len(fe), 3)
        msg = fe[0]["messages"][0]
        self.assertEqual(msg["role"], "user")
        self.assertEqual(msg["content"],
                         "No tool calls found in the response. Every response MUST include at least one tool call.")
        self.assertEqual(msg["extra"]["interrupt_type"], "FormatError")
        self.assertEqual(msg["extra"]["response"]["id"], "chatcmpl-mock0")
        self.assertIn("Unknown tool 'python'.", fe[1]["messages"][0]["content"])
        self.assertIn("Missing 'command' argument", fe[1]["messages"][0]["content"])
        self.assertTrue(fe[2]["messages"][0]["content"].startswith("Error parsing tool call arguments:"))
        stats = by_event(ev, "stats")[0]
        self.assertEqual(stats["calls"], 4)                  # format errors count as calls ...
        self.assertAlmostEqual(stats["cost"], 4 * (10 * 2.5e-6 + 5 * 10e-6), places=12)   # ... and cost
        # the format error messages were sent as user messages, no assistant message for them
        last = sent_messages(m.requests()[3])
        self.assertEqual([x["role"] for x in last], ["system", "user", "user", "user", "user"])

    def test_custom_format_error_template(self):
        m = self.mock([{"text": "hmm", "finish_reason": "length", "usage": {"input": 1, "output": 1}}])
        cfg = {"model_name": "gpt-4o", "model_kwargs": {"api_base": m.url + "/v1"},
               "format_error_template": "{% if finish_reason == 'length' %}Too long.{% else %}{{error}}{% endif %}"}
        rc, ev, out = run_probe(cfg, env=clean_env(OPENAI_API_KEY=KEY))
        self.assertEqual(by_event(ev, "format_error")[0]["messages"][0]["content"], "Too long.")

    def test_empty_choices_is_retried(self):
        m = self.mock([{"empty_choices": True}, {"tool_calls": [{"command": "ls"}], "usage": {"input": 1, "output": 1}}])
        cfg = {"model_name": "gpt-4o", "model_kwargs": {"api_base": m.url + "/v1"}}
        rc, ev, out = run_probe(cfg, env=clean_env(OPENAI_API_KEY=KEY))
        self.assertEqual(rc, 0, out)
        self.assertEqual(len(m.requests()), 2)


class TextMode(Base):
    def test_action_regex(self):
        m = self.mock([
            {"text": "No code block here.", "usage": {"input": 10, "output": 5}},
            {"text": "```mswea_bash_command\nls\n```\nand\n```mswea_bash_command\npwd\n```", "usage": {"input": 10, "output": 5}},
            {"text": "THOUGHT: list.\n\n```mswea_bash_command\n  ls -la  \n```\n", "usage": {"input": 10, "output": 5}},
        ])
        cfg = {"model_name": "openai/gpt-4o", "model_class": "litellm_textbased",
               "model_kwargs": {"api_base": m.url + "/v1"}}
        rc, ev, out = run_probe(cfg, steps=3, env=clean_env(OPENAI_API_KEY=KEY))
        self.assertEqual(rc, 0, out)
        fe = by_event(ev, "format_error")
        self.assertEqual(len(fe), 2)
        self.assertEqual(fe[0]["messages"][0]["content"],
                         "Please always provide EXACTLY ONE action in triple backticks, found 0 actions.")
        self.assertEqual(fe[0]["messages"][0]["extra"]["n_actions"], 0)
        self.assertEqual(fe[0]["messages"][0]["extra"]["model_response"], "No code block here.")
        self.assertEqual(fe[1]["messages"][0]["content"],
                         "Please always provide EXACTLY ONE action in triple backticks, found 2 actions.")
        asst = by_event(ev, "assistant")
        self.assertEqual(len(asst), 1)
        self.assertEqual(asst[0]["message"]["extra"]["actions"], [{"command": "ls -la"}])
        obs = by_event(ev, "observations")[0]["messages"]
        self.assertEqual(obs[0]["role"], "user")
        self.assertNotIn("tool_call_id", obs[0])
        reqs = m.requests()
        self.assertEqual(len(reqs), 3)
        self.assertNotIn("tools", reqs[0]["body"])
        stats = by_event(ev, "stats")[0]
        self.assertEqual(stats["calls"], 3)
        self.assertEqual(stats["class"], "openai_textbased")

    def test_custom_regex(self):
        m = self.mock([{"text": "<cmd>echo hi</cmd>", "usage": {"input": 1, "output": 1}}])
        cfg = {"model_name": "gpt-4o", "model_class": "openai_textbased", "action_regex": "<cmd>(.*?)</cmd>",
               "model_kwargs": {"api_base": m.url + "/v1"}}
        rc, ev, out = run_probe(cfg, env=clean_env(OPENAI_API_KEY=KEY))
        self.assertEqual(by_event(ev, "assistant")[0]["message"]["extra"]["actions"], [{"command": "echo hi"}])

    def test_bad_regex(self):
        rc, ev, out = run_probe({"model_name": "gpt-4o", "model_class": "openai_textbased", "action_regex": "(",
                                 "cost_tracking": "ignore_errors", "model_kwargs": {"api_base": "http://127.0.0.1:9"}})
        self.assertEqual(rc, 2)
        self.assertIn("action_regex", ev[0]["message"])


class Anthropic(Base):
    def test_tool_use_round_trip(self):
        m = self.mock([
            {"text": "I'll look around.", "thinking": "hmm",
             "tool_calls": [{"command": "ls"}, {"command": "cat README"}],
             "usage": {"input": 100, "output": 50, "cached": 1000, "cache_write": 200}},
            {"tool_calls": [{"command": "echo done"}], "usage": {"input": 10, "output": 5}},
        ])
        cfg = {"model_name": "anthropic/claude-sonnet-4-5-20250929", "model_kwargs": {"temperature": 0}}
        rc, ev, out = run_probe(cfg, steps=2, env=clean_env(ANTHROPIC_API_KEY=ANTHROPIC_KEY, ANTHROPIC_BASE_URL=m.url))
        self.assertEqual(rc, 0, out)
        asst = by_event(ev, "assistant")
        a1 = asst[0]["message"]
        self.assertEqual(a1["content"], "I'll look around.")
        self.assertEqual(a1["extra"]["actions"], [{"command": "ls", "tool_call_id": "toolu_0_0"},
                                                  {"command": "cat README", "tool_call_id": "toolu_0_1"}])
        self.assertEqual(a1["tool_calls"][1]["function"]["arguments"], '{"command":"cat README"}')
        self.assertEqual(a1["thinking_blocks"][0]["thinking"], "hmm")
        self.assertEqual(a1["extra"]["response"]["type"], "message")
        cost = 100 * 3e-6 + 50 * 15e-6 + 1000 * 0.3e-6 + 200 * 3.75e-6
        self.assertAlmostEqual(a1["extra"]["cost"], cost, places=12)
        obs = by_event(ev, "observations")[0]["messages"]
        self.assertEqual([(o["role"], o["tool_call_id"]) for o in obs], [("tool", "toolu_0_0"), ("tool", "toolu_0_1")])

        reqs = m.requests()
        self.assertEqual(len(reqs), 2)
        r0 = reqs[0]
        self.assertEqual(r0["path"], "/v1/messages")
        self.assertEqual(r0["headers"]["x-api-key"], ANTHROPIC_KEY)
        self.assertEqual(r0["headers"]["anthropic-version"], "2023-06-01")
        self.assertNotIn("authorization", r0["headers"])
        b0 = r0["body"]
        self.assertEqual(b0["model"], "claude-sonnet-4-5-20250929")
        self.assertEqual(b0["system"], "You are a helpful assistant.")
        self.assertIsInstance(b0["max_tokens"], int)
        self.assertEqual(b0["temperature"], 0)
        self.assertEqual(b0["tools"][0]["name"], "bash")
        self.assertEqual(b0["tools"][0]["input_schema"]["properties"]["command"]["type"], "string")
        self.assertEqual(b0["messages"], [{"role": "user", "content": [
            {"type": "text", "text": "Please list the files.", "cache_control": {"type": "ephemeral"}}]}])
        b1 = reqs[1]["body"]
        self.assertEqual([x["role"] for x in b1["messages"]], ["user", "assistant", "user"])
        blocks = b1["messages"][1]["content"]
        self.assertEqual([b["type"] for b in blocks], ["thinking", "text", "tool_use", "tool_use"])
        self.assertEqual(blocks[2], {"type": "tool_use", "id": "toolu_0_0", "name": "bash", "input": {"command": "ls"}})
        results = b1["messages"][2]["content"]
        self.assertEqual([(b["type"], b["tool_use_id"]) for b in results],
                         [("tool_result", "toolu_0_0"), ("tool_result", "toolu_0_1")])
        self.assertEqual(results[0]["content"], obs[0]["content"])
        self.assertEqual(results[1]["cache_control"], {"type": "ephemeral"})
        self.assertNotIn("cache_control", results[0])
        self.assertNoKey(out, ANTHROPIC_KEY)
        self.assertEqual(by_event(ev, "stats")[0]["class"], "anthropic")

    def test_api_base_in_config_and_errors(self):
        m = self.mock([{"status": 401, "message": "invalid x-api-key " + ANTHROPIC_KEY}])
        cfg = {"model_name": "claude-haiku-4-5", "model_class": "anthropic",
               "model_kwargs": {"api_base": m.url + "/v1", "max_tokens": 100}}
        rc, ev, out = run_probe(cfg, env=clean_env(ANTHROPIC_API_KEY=ANTHROPIC_KEY))
        self.assertEqual(rc, 1)
        err = by_event(ev, "error")[0]
        self.assertIn("HTTP 401", err["message"])
        self.assertIn("authentication_error", err["message"])
        self.assertEqual(len(m.requests()), 1)
        self.assertEqual(m.requests()[0]["path"], "/v1/messages")
        self.assertEqual(m.requests()[0]["body"]["max_tokens"], 100)
        self.assertNoKey(out, ANTHROPIC_KEY)

    def test_text_mode(self):
        m = self.mock([{"text": "THOUGHT\n```mswea_bash_command\nls\n```", "usage": {"input": 10, "output": 5}}])
        cfg = {"model_name": "claude-3-5-haiku-20241022", "model_class": "anthropic_textbased",
               "set_cache_control": None, "model_kwargs": {"api_base": m.url}}
        rc, ev, out = run_probe(cfg, env=clean_env(ANTHROPIC_API_KEY=ANTHROPIC_KEY))
        self.assertEqual(rc, 0, out)
        self.assertEqual(by_event(ev, "assistant")[0]["message"]["extra"]["actions"], [{"command": "ls"}])
        body = m.requests()[0]["body"]
        self.assertNotIn("tools", body)
        self.assertEqual(body["messages"], [{"role": "user", "content": [{"type": "text", "text": "Please list the files."}]}])
        self.assertEqual(by_event(ev, "observations")[0]["messages"][0]["role"], "user")

    def test_overloaded_529_is_retried(self):
        m = self.mock([{"status": 529}, {"tool_calls": [{"command": "ls"}], "usage": {"input": 1, "output": 1}}])
        cfg = {"model_name": "anthropic/claude-haiku-4-5", "model_kwargs": {"api_base": m.url}}
        rc, ev, out = run_probe(cfg, env=clean_env(ANTHROPIC_API_KEY=ANTHROPIC_KEY))
        self.assertEqual(rc, 0, out)
        self.assertEqual(len(m.requests()), 2)


class Retries(Base):
    def cfg(self, m, **kw):
        c = {"model_name": "gpt-4o-mini", "model_kwargs": {"api_base": m.url + "/v1"}}
        c["model_kwargs"].update(kw)
        return c

    OK = {"tool_calls": [{"command": "ls"}], "usage": {"input": 1, "output": 1}}

    def test_429_retry_after(self):
        m = self.mock([{"status": 429, "retry_after": "1"}, self.OK])
        rc, ev, out = run_probe(self.cfg(m), env=clean_env(OPENAI_API_KEY=KEY))
        self.assertEqual(rc, 0, out)
        reqs = m.requests()
        self.assertEqual(len(reqs), 2)
        # Retry-After: 1 is honoured although the backoff base is 10 ms
        self.assertGreaterEqual(reqs[1]["time"] - reqs[0]["time"], 0.9)

    def test_500_with_backoff(self):
        m = self.mock([{"status": 500}, {"status": 503}, self.OK])
        rc, ev, out = run_probe(self.cfg(m), env=clean_env(OPENAI_API_KEY=KEY))
        self.assertEqual(rc, 0, out)
        self.assertEqual(len(m.requests()), 3)

    def test_garbage_until_the_budget_is_spent(self):
        m = self.mock([{"garbage": True}] * 5)
        rc, ev, out = run_probe(self.cfg(m), env=clean_env(OPENAI_API_KEY=KEY, MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT="3"))
        self.assertEqual(rc, 1)
        err = by_event(ev, "error")[0]
        self.assertEqual(err["code"], "model_error")
        self.assertIn("failed 3 times", err["message"])
        self.assertIn("not JSON", err["message"])
        self.assertEqual(len(m.requests()), 3)

    def test_garbage_then_success(self):
        m = self.mock([{"garbage": True}, self.OK])
        rc, ev, out = run_probe(self.cfg(m), env=clean_env(OPENAI_API_KEY=KEY))
        self.assertEqual(rc, 0, out)

    def test_malformed_shapes_are_retried(self):
        bad = ['{"choices": [{"message": {"content": 5}}]}', '{"choices": [{"message": "x"}]}', '[]',
               '{"choices": [{"message": {"tool_calls": {}}}]}', '{"error": {"message": "upstream overloaded"}}',
               '"\\ud800"']
        m = self.mock([{"body": b} for b in bad] + [self.OK])
        rc, ev, out = run_probe(self.cfg(m), env=clean_env(OPENAI_API_KEY=KEY))
        self.assertEqual(rc, 0, out)
        self.assertEqual(len(m.requests()), len(bad) + 1)

    def test_dropped_connection(self):
        m = self.mock([{"drop": True}, {"drop": True}, self.OK])
        rc, ev, out = run_probe(self.cfg(m), env=clean_env(OPENAI_API_KEY=KEY))
        self.assertEqual(rc, 0, out)
        self.assertEqual(len(m.requests()), 3)

    def test_dropped_connection_budget(self):
        m = self.mock([{"drop": True}] * 4)
        rc, ev, out = run_probe(self.cfg(m), env=clean_env(OPENAI_API_KEY=KEY, MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT="2"))
        self.assertEqual(rc, 1)
        self.assertIn("failed 2 times", by_event(ev, "error")[0]["message"])
        self.assertEqual(len(m.requests()), 2)

    def test_slow_reply_times_out_and_is_retried(self):
        m = self.mock([dict(self.OK, delay=3), self.OK])
        rc, ev, out = run_probe(self.cfg(m, timeout=0.5), env=clean_env(OPENAI_API_KEY=KEY))
        self.assertEqual(rc, 0, out)
        self.assertEqual(len(m.requests()), 2)

    def test_client_errors_are_not_retried(self):
        for status in (400, 401, 403, 404, 422):
            with self.subTest(status=status):
                m = self.mock([{"status": status, "message": f"nope, your key is {KEY}"}, self.OK])
                rc, ev, out = run_probe(self.cfg(m), env=clean_env(OPENAI_API_KEY=KEY))
                self.assertEqual(rc, 1)
                self.assertEqual(len(m.requests()), 1)
                err = by_event(ev, "error")[0]
                self.assertIn(f"HTTP {status}", err["message"])
                self.assertIn("nope, your key is ***", err["message"])
                self.assertNoKey(out)

    def test_vllm_error_body(self):
        body = json.dumps({"object": "error", "message": "This model's maximum context length is 32768 tokens.",
                           "type": "BadRequestError", "param": None, "code": 400})
        m = self.mock([{"status": 400, "body": body}])
        cfg = {"model_name": "hosted_vllm/Qwen/Qwen3-8B", "cost_tracking": "ignore_errors",
               "model_kwargs": {"api_base": m.url + "/v1"}}
        rc, ev, out = run_probe(cfg)
        self.assertEqual(rc, 1)
        self.assertIn("maximum context length is 32768 tokens. (BadRequestError)", by_event(ev, "error")[0]["message"])
        self.assertEqual(len(m.requests()), 1)

    def test_unreachable_server(self):
        # Nothing listens on this machine's loopback at the first request:
        # said at once, not retried (docs/models.md, "Retries"); a refusal
        # later in a run is retried (tests/interactive/first_contact.sh),
        # as are dropped connections (test_dropped_connection_*).
        cfg = {"model_name": "gpt-4o", "model_kwargs": {"api_base": "http://127.0.0.1:9/v1"}}
        start = time.monotonic()
        rc, ev, out = run_probe(cfg, env=clean_env(OPENAI_API_KEY=KEY, MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT="2",
                                                   MINI_RETRY_BASE_MS="1000"))
        self.assertEqual(rc, 1)
        msg = by_event(ev, "error")[0]["message"]
        self.assertIn("nothing listens at http://127.0.0.1:9/v1 (connection refused); is the server running?", msg)
        self.assertNotIn("failed 2 times", msg)
        self.assertLess(time.monotonic() - start, 3.5)  # the first wait alone would be 4 s


class Cost(Base):
    OK = {"tool_calls": [{"command": "ls"}], "usage": {"input": 1000, "output": 100}}

    def test_unknown_price_is_an_error(self):
        cfg = {"model_name": "openai/my-local-model", "model_kwargs": {"api_base": "http://127.0.0.1:9/v1"}}
        rc, ev, out = run_probe(cfg)
        self.assertEqual(rc, 2)
        self.assertIn("my-local-model", ev[0]["message"])
        self.assertIn("ignore_errors", ev[0]["message"])

    def test_unknown_price_ignored(self):
        for env, cfg_extra in ((clean_env(), {"cost_tracking": "ignore_errors"}),
                               (clean_env(MSWEA_COST_TRACKING="ignore_errors"), {})):
            m = self.mock([self.OK])
            cfg = dict({"model_name": "hosted_vllm/Qwen/Qwen3-8B", "model_kwargs": {"api_base": m.url + "/v1"}},
                       **cfg_extra)
            rc, ev, out = run_probe(cfg, env=env)
            self.assertEqual(rc, 0, out)
            a = by_event(ev, "assistant")[0]["message"]
            self.assertEqual(a["extra"]["cost"], 0)
            self.assertEqual(m.requests()[0]["body"]["model"], "Qwen/Qwen3-8B")
            self.assertNotIn("authorization", m.requests()[0]["headers"])   # local server, no key
            self.assertEqual(by_event(ev, "stats")[0]["template_vars"]["cost_tracking"], "ignore_errors")

    def test_prices_from_model_kwargs(self):
        m = self.mock([self.OK])
        cfg = {"model_name": "my-model", "model_kwargs": {"api_base": m.url + "/v1", "input_cost_per_token": 1e-6,
                                                          "output_cost_per_token": 2e-6}}
        rc, ev, out = run_probe(cfg)
        self.assertEqual(rc, 0, out)
        self.assertAlmostEqual(by_event(ev, "assistant")[0]["message"]["extra"]["cost"], 1000e-6 + 200e-6, places=12)
        self.assertNotIn("input_cost_per_token", m.requests()[0]["body"])

    def test_prices_from_registry(self):
        m = self.mock([self.OK])
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"my-model": {"input_cost_per_token": 3e-6, "output_cost_per_token": 4e-6,
                                    "litellm_provider": "openai", "mode": "chat"}}, f)
        self.addCleanup(os.unlink, f.name)
        cfg = {"model_name": "openai/my-model", "litellm_model_registry": f.name,
               "model_kwargs": {"api_base": m.url + "/v1"}}
        rc, ev, out = run_probe(cfg)
        self.assertEqual(rc, 0, out)
        self.assertAlmostEqual(by_event(ev, "assistant")[0]["message"]["extra"]["cost"], 3000e-6 + 400e-6, places=12)

    def test_missing_usage(self):
        m = self.mock([dict(self.OK, usage=False)])
        cfg = {"model_name": "gpt-4o", "model_kwargs": {"api_base": m.url + "/v1"}}
        rc, ev, out = run_probe(cfg, env=clean_env(OPENAI_API_KEY=KEY))
        self.assertEqual(rc, 1)
        self.assertIn("no token usage", by_event(ev, "error")[0]["message"])
        self.assertIn("ignore_errors", by_event(ev, "error")[0]["message"])

    def test_openrouter_reported_cost(self):
        m = self.mock([dict(self.OK, cost=0.0123)])
        cfg = {"model_name": "openrouter/anthropic/claude-sonnet-4.5", "model_kwargs": {"api_base": m.url + "/api/v1"}}
        rc, ev, out = run_probe(cfg, env=clean_env(OPENROUTER_API_KEY=KEY))
        self.assertEqual(rc, 0, out)
        r = m.requests()[0]
        self.assertEqual(r["path"], "/api/v1/chat/completions")
        self.assertEqual(r["body"]["model"], "anthropic/claude-sonnet-4.5")
        self.assertEqual(r["body"]["usage"], {"include": True})
        self.assertEqual(r["headers"]["authorization"], "Bearer " + KEY)
        self.assertAlmostEqual(by_event(ev, "assistant")[0]["message"]["extra"]["cost"], 0.0123, places=12)
        self.assertEqual(by_event(ev, "stats")[0]["class"], "openrouter")

    def test_missing_key(self):
        rc, ev, out = run_probe({"model_name": "gpt-4o"})
        self.assertEqual(rc, 2)
        self.assertIn("OPENAI_API_KEY", ev[0]["message"])
        rc, ev, out = run_probe({"model_name": "anthropic/claude-opus-4-5"})
        self.assertIn("ANTHROPIC_API_KEY", ev[0]["message"])

    def test_global_call_limit(self):
        m = self.mock([self.OK, self.OK, self.OK])
        cfg = {"model_name": "gpt-4o", "model_kwargs": {"api_base": m.url + "/v1"}}
        rc, ev, out = run_probe(cfg, steps=3, env=clean_env(OPENAI_API_KEY=KEY, MSWEA_GLOBAL_CALL_LIMIT="2"))
        self.assertEqual(rc, 1)
        self.assertEqual(len(by_event(ev, "assistant")), 2)
        self.assertIn("global cost/call limit", by_event(ev, "error")[0]["message"])
        self.assertEqual(len(m.requests()), 2)


def main():
    global PROBE, MOCK
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", required=True)
    ap.add_argument("--mock", required=True)
    args, rest = ap.parse_known_args()
    PROBE, MOCK = args.probe, args.mock
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
