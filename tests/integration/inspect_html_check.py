#!/usr/bin/env python3
"""Checks on the HTML report of `mini inspect`, as a browser built it.

    inspect_html_check.py dom DOM.html FACTS.json TITLE
        DOM.html is `chromium --headless --dump-dom` of the report (the DOM
        after the page loaded, so after any script that ran).  Checks: the
        title is TITLE (a script would have changed it), no <img>, <script>,
        <iframe> or on* attribute exists, each trajectory's section has its
        number of steps, the hostile strings are there as text, the
        overview has a row per trajectory, broken files show their error.
    inspect_html_check.py png SHOT.png BLANK.png
        SHOT.png is a screenshot of the report, BLANK.png of an empty page:
        the report's has a real share of non-background pixels.
Prints one line per check ("ok - ..." / "FAIL - ..."); exit 1 on a failure.
"""
import json
import struct
import sys
import zlib
from html.parser import HTMLParser

failed = 0


def check(name, cond, detail=""):
    global failed
    if cond:
        print(f"ok - {name}")
    else:
        failed += 1
        print(f"FAIL - {name}" + (f": {detail}" if detail else ""))


class Dom(HTMLParser):
    """Elements (tag, attrs, the ids of the <section class=traj> it is in)
    and the text of each trajectory section."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []
        self.elements = []
        self.title = ""
        self.text = {}  # section id -> text
        self.h2 = {}    # section id -> its h2 text
        self.in_title = False
        self.cur_h2 = None

    def traj(self):
        for tag, attrs in reversed(self.stack):
            if tag == "section" and "traj" in (attrs.get("class") or "").split():
                return attrs.get("id")
        return None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a, self.traj()))
        if tag not in ("meta", "link", "br", "img", "input", "hr"):
            self.stack.append((tag, a))
        self.in_title = tag == "title"
        if tag == "h2":
            self.cur_h2 = self.traj()

    def handle_endtag(self, tag):
        while self.stack:
            t, _ = self.stack.pop()
            if t == tag:
                break
        if tag == "title":
            self.in_title = False
        if tag == "h2":
            self.cur_h2 = None

    def handle_data(self, data):
        if self.in_title:
            self.title += data
        t = self.traj()
        if t:
            self.text[t] = self.text.get(t, "") + data
        if self.cur_h2:
            self.h2[self.cur_h2] = self.h2.get(self.cur_h2, "") + data


def dom_checks(path, facts_path, title):
    facts = json.load(open(facts_path))
    d = Dom()
    d.feed(open(path, encoding="utf-8", errors="strict").read())
    check("the title is the report's own (no script retitled the page)", d.title == title, repr(d.title))
    bad = [(t, a) for t, a, _ in d.elements if t in ("img", "script", "iframe", "object", "embed")]
    check("no <img>, <script>, <iframe>, <object> element in the DOM", not bad, repr(bad[:3]))
    on = [(t, k) for t, a, _ in d.elements for k in a if k.lower().startswith("on")]
    check("no on* event attribute in the DOM", not on, repr(on[:3]))
    by_id = {v.strip(): k for k, v in d.h2.items()}
    for tid, f in facts["trajs"].items():
        sec = by_id.get(tid)
        if not sec:
            check(f"{tid}: has its section", False, f"sections: {sorted(by_id)}")
            continue
        steps = sum(1 for t, a, s in d.elements
                    if s == sec and t == "section" and "step" in (a.get("class") or "").split())
        check(f"{tid}: {f['steps']} steps in its section", steps == f["steps"], f"found {steps}")
        index = sum(1 for t, a, s in d.elements if s == sec and t == "a" and (a.get("href") or "").startswith(f"#{sec}-s")
                    and a.get("href") != f"#{sec}-s0")
        check(f"{tid}: the step index links each step", index == f["steps"], f"found {index}")
    hostile = d.text.get(by_id.get("hostile"), "")
    for s in ["<img src=x onerror=\"document.title='pwned-img'\">", "</script><script>document.title='pwned-script'</script>",
              "& \"quotes\" 'single'", "^[]0;pwned-title^G", "\\u202eevil", "nul\u2400byte", "INVALID-UTF8-\ufffd"]:
        check(f"hostile: shown as text: {s[:40]}", s in hostile)
    check("hostile: no raw ESC or C1 control in the page",
          not any(c in hostile for c in "\x1b\x9b\x07\x00"))
    rows = sum(1 for t, a, s in d.elements if t == "tr" and s is None) - 1  # the overview, its header row off
    n = len(facts["trajs"]) + len(facts["broken"])
    check(f"the overview has a row per trajectory ({n})", rows == n, f"found {rows}")
    for name, want in facts["broken"].items():
        sec = by_id.get(name)
        check(f"broken {name}: its section shows the error ({want})", sec and want in d.text.get(sec, ""),
              d.text.get(sec, "")[:200] if sec else "no section")
    folds = sum(1 for t, a, s in d.elements if t == "details" and s == by_id.get("alpha-1"))
    check("a long output is folded (<details>)", folds >= 2, f"found {folds}")


def png_pixels(path):
    """The RGB(A) rows of a PNG (8-bit, no interlace), as bytes per row."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), f"PNG colour type {ctype} depth {depth}"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, i = [], bytearray(stride), 0
    while i < len(raw):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return rows, bpp


def ink(path):
    """The share of pixels that differ from the top-left one (the background)."""
    rows, bpp = png_pixels(path)
    bg = rows[0][:3]
    total = differ = 0
    for r in rows[::2]:
        for x in range(0, len(r), bpp * 2):
            total += 1
            differ += r[x:x + 3] != bg
    return differ / max(total, 1)


def png_checks(shot, blank):
    a, b = ink(shot), ink(blank)
    print(f"# screenshot: {a:.1%} of the pixels drawn; empty page: {b:.1%}")
    check("the screenshot of the report is not empty (more than 1% of its pixels drawn)", a > 0.01, f"{a:.2%}")
    check("the screenshot differs from an empty page's", a > b)


if __name__ == "__main__":
    if sys.argv[1] == "dom":
        dom_checks(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        png_checks(sys.argv[2], sys.argv[3])
    sys.exit(1 if failed else 0)
