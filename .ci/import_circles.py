#!/usr/bin/env python3
"""Lists the import circles between the source files of each library crate.

A circle is a set of files that import each other, directly or through others: file A
uses an item of file B and B, through any chain, uses an item of A. Such files cannot be
read, tested or moved one at a time, so the workspace keeps none, except the ones
ARCHITECTURE.md names under "Import circles kept" (a type split across two files, a
parent/child back-reference).

How a file's imports are found: every `use` tree (braces expanded) and every path in the
code that starts with `crate::`, `super::` or `self::` is resolved to the file of the
longest module prefix that exists, then followed through that file's `pub use`
re-exports to the file that defines the item. A module file's re-exports of its own
descendants (`mod.rs`'s `pub use child::Item`) are its structure and are not counted; a
child's use of its parent's items (`super::helper`) and a parent's calls into its child
are edges like any other. Comments and string and char literals (raw ones, and strings
continued over lines with `\`) are blanked first. Only `src/` of crates with a `lib.rs`
is read.

Usage: .ci/import_circles.py [--all | --self-test]   (exit 1 when a circle is not among the
kept ones; --all lists the kept ones too; --self-test checks the checker on planted
circles, exit 1 when it misses one or finds one that is not there)
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
USE = re.compile(r"\b(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.S)
PATH = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")
# Comments, string literals (plain, byte, raw with any number of `#`, continued over lines
# with `\`) and char literals, in one pass: a `//` inside a string is no comment, and a `"`
# inside a char literal or a raw string opens no string.
LITERAL = re.compile(
    r"""//[^\n]*|/\*.*?\*/|b?r(#*)".*?"\1|b?"(?:\\.|[^"\\])*"|b?'(?:\\.|[^\\'\n])'""",
    re.S,
)


def expand(tree):
    """`a::{b, c::{d, e as f}}` -> [[a, b], [a, c, d], [a, c, e]]."""
    out = []

    def walk(prefix, text):
        depth, start, parts = 0, 0, []
        for i, ch in enumerate(text):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(text[start:i])
                start = i + 1
        parts.append(text[start:])
        for part in (p.strip() for p in parts):
            if not part:
                continue
            brace = part.find("{")
            if brace >= 0:
                head = [p.strip() for p in part[:brace].split("::") if p.strip()]
                walk(prefix + head, part[brace + 1 : part.rindex("}")])
            else:
                part = re.sub(r"\s+as\s+\w+$", "", part)
                out.append(prefix + [p.strip() for p in part.split("::") if p.strip()])

    walk([], tree)
    return out


class Crate:
    def __init__(self, src):
        self.src = src
        self.files = {}  # module path tuple -> file
        for f in sorted(src.rglob("*.rs")):
            rel = f.relative_to(src)
            if rel.parts[0] == "bin" or rel.name == "main.rs":
                continue
            parts = list(rel.with_suffix("").parts)
            if parts[-1] in ("mod", "lib"):
                parts.pop()
            self.files[tuple(parts)] = f
        self.text = {m: self._clean(f.read_text()) for m, f in self.files.items()}
        self.reexports = {m: self._reexports(m) for m in self.files}

    @staticmethod
    def _clean(text):
        text = LITERAL.sub(lambda m: "" if m.group(0).startswith("/") else '""', text)
        # Unit tests beside the code may import anything; they are not the module's imports.
        cut = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)
        return text[: cut.start()] if cut else text

    def absolute(self, module, path):
        """A `crate::`/`super::`/`self::` path seen in `module`, as a path from the root."""
        if path[0] == "crate":
            return list(path[1:])
        base = list(module)
        i = 0
        while i < len(path) and path[i] in ("super", "self"):
            if path[i] == "super":
                if not base:
                    return None
                base.pop()
            i += 1
        return base + list(path[i:])

    def _reexports(self, module):
        found = {}
        for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", self.text[module]):
            for path in expand(m.group(1)):
                if path[0] in ("crate", "super", "self"):
                    target = self.absolute(module, path)
                elif tuple(module + (path[0],)) in self.files:
                    target = list(module) + path
                else:
                    continue
                if target:
                    found[path[-1]] = target
        return found

    def resolve(self, path, seen=None):
        """The file module that defines the item at `path` (a path from the root)."""
        seen = seen or set()
        for n in range(len(path), -1, -1):
            mod = tuple(path[:n])
            if mod in self.files:
                rest = path[n:]
                if rest and rest[0] in self.reexports[mod] and (mod, rest[0]) not in seen:
                    seen.add((mod, rest[0]))
                    return self.resolve(self.reexports[mod][rest[0]] + rest[1:], seen)
                return mod
        return ()

    def edges(self):
        graph = {m: set() for m in self.files}
        for module, text in self.text.items():
            paths = []
            # Re-exports of the module's own descendants (`mod.rs`'s `pub use child::Item`)
            # are its structure, not a use; every other path, to a descendant or an
            # ancestor included, is an edge.
            reexported = set()
            for m in USE.finditer(text):
                for p in expand(m.group(1)):
                    if p and p[0] in ("crate", "super", "self"):
                        paths.append(p)
                    elif p and tuple(module + (p[0],)) in self.files:
                        paths.append(["self"] + p)
                    else:
                        continue
                    if m.group(0).lstrip().startswith("pub"):
                        reexported.add(id(paths[-1]))
            body = USE.sub(lambda m: " " * len(m.group(0)), text)
            paths += [m.group(1).split("::") for m in PATH.finditer(body)]
            # A child module named by its bare name (`child::run()`, 2018 paths).
            for child in (f[-1] for f in self.files if len(f) == len(module) + 1 and f[:-1] == module):
                for m in re.finditer(rf"(?<![:\w]){child}((?:::[A-Za-z_]\w*)+)", body):
                    paths.append(["self", child] + m.group(1).split("::")[1:])
            # A module imported by name (`use crate::codegen::{self, ..}`, `use super::keys`)
            # is then used through that name: `codegen::matmul::Kernel`.
            for p in list(paths):
                target = self.absolute(module, [x for x in p if x != "self"] or p)
                if target and tuple(target) in self.files and target:
                    alias = target[-1]
                    for m in re.finditer(rf"(?<![:\w]){alias}((?:::[A-Za-z_]\w*)+)", text):
                        paths.append(["crate"] + target + m.group(1).split("::")[1:])
            for p in paths:
                target = self.absolute(module, [x for x in p if x != "self"] or p)
                if target is None:
                    continue
                dest = self.resolve(target)
                if dest == module:
                    continue
                if id(p) in reexported and dest[: len(module)] == module:
                    continue
                graph[module].add(dest)
        return graph


def circles(graph):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def kept():
    """The circles ARCHITECTURE.md keeps: lines `- crate-folder: a.rs <-> b.rs ...`."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    section = text.split("## Import circles kept", 1)
    if len(section) < 2:
        return set()
    body = section[1].split("\n## ", 1)[0]
    found = set()
    for line in body.splitlines():
        m = re.match(r"-\s+`([^`]+)`:\s+`([^`]+)`((?:\s+↔\s+`[^`]+`)+)", line)
        if m:
            files = [m.group(2)] + re.findall(r"`([^`]+)`", m.group(3))
            found.add((m.group(1), tuple(sorted(files))))
    return found


# Planted crates for `--self-test`: (files, the circles the checker must report).
PLANTED = [
    (
        # A string continued with `\` threw the quote pairing off for the rest of the file:
        # `b.rs`'s use of `a` was read as inside a string.
        {
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": 'pub fn f() {}\nuse crate::b::g;\n',
            "b.rs": 'const S: &str = "one \\\n  two";\npub fn g() { crate::a::f() }\nconst T: &str = "t";\n',
        },
        [("a.rs", "b.rs")],
    ),
    (
        # A parent that calls its child, whose code calls back into the parent.
        {
            "lib.rs": "mod p;\n",
            "p/mod.rs": "mod c;\npub fn top() { c::run() }\npub fn helper() {}\n",
            "p/c.rs": "pub fn run() { super::helper() }\n",
        },
        [("p/c.rs", "p/mod.rs")],
    ),
    (
        # No circle: a parent re-exporting its child, text that looks like imports inside
        # strings, raw strings and comments, and a `"` char literal.
        {
            "lib.rs": "mod p;\npub use p::run;\n",
            "p/mod.rs": "mod c;\npub use c::run;\n",
            "p/c.rs": (
                "pub fn run() { let _ = ('\"', r#\"use crate::p::x; \"# , \"// \\\"crate::p::y\"); }\n"
                "// use super::z;\n"
            ),
        },
        [],
    ),
]


def self_test():
    """Runs the checker on the planted crates; returns what went wrong, if anything."""
    import tempfile

    failures = []
    for files, want in PLANTED:
        with tempfile.TemporaryDirectory() as tmp:
            src = pathlib.Path(tmp) / "src"
            for name, text in files.items():
                (src / name).parent.mkdir(parents=True, exist_ok=True)
                (src / name).write_text(text)
            crate = Crate(src)
            got = sorted(
                tuple(sorted(str(crate.files[m].relative_to(src)) for m in comp))
                for comp in circles(crate.edges())
            )
            if got != sorted(want):
                failures.append(f"planted {sorted(files)}: found {got}, want {sorted(want)}")
    return failures


def main():
    if "--self-test" in sys.argv[1:]:
        failures = self_test()
        for f in failures:
            print(f"self-test FAILED: {f}")
        print(f"import circle checker self-test: {len(PLANTED) - len(failures)} of {len(PLANTED)} planted cases right")
        return 1 if failures else 0
    show_all = "--all" in sys.argv[1:]
    allowed = kept()
    unexpected = 0
    total = 0
    for lib in sorted(ROOT.glob("**/src/lib.rs")):
        if "target" in lib.parts or ".git" in lib.parts:
            continue
        crate = Crate(lib.parent)
        folder = str(lib.parent.parent.relative_to(ROOT))
        for comp in circles(crate.edges()):
            total += 1
            names = tuple(sorted(str(crate.files[m].relative_to(lib.parent)) for m in comp))
            is_kept = (folder, names) in allowed
            if not is_kept:
                unexpected += 1
            if show_all or not is_kept:
                tag = "kept" if is_kept else "CIRCLE"
                print(f"{tag} {folder}: {' <-> '.join(names)}")
    print(f"import circles: {total} found, {total - unexpected} kept by ARCHITECTURE.md, {unexpected} not")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
