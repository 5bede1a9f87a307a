#!/usr/bin/env python3
"""Structure check for every crate of the workspace (issue 37).

Run from the repository root:

    scripts/structure.py              # exit 1 and list the findings, 0 and a summary
    scripts/structure.py --list       # the counts per crate, whatever they are
    scripts/structure.py --self-test  # the checker's own tests, on in-memory samples

Two findings:

* an import cycle between sibling modules: for every module of a crate, the
  graph whose nodes are its child modules, with an edge a -> b when any code in
  a's subtree names anything in b's subtree (`use crate::...`, `use super::...`,
  `pub use`, a `crate::a::b` or `super::b` path in code, or a name imported
  into a common ancestor and re-exported from b); every strongly connected
  component of more than one node is a cycle;
* a shipped function longer than 100 lines, from its `fn` line to its closing
  brace, unless a comment `// structure: data table (the reason)` stands right
  above it (above its attributes and docs, if any).

Shipped means reachable from `src/lib.rs`, `src/main.rs` or `src/bin/*.rs`
through `mod` declarations, outside `#[cfg(test)]` items and the files they
include; `tests/`, `benches/`, `fuzz/` and `examples/` are never read.

Python 3, the standard library only. The parsing is lexical (comments, strings
and char literals are blanked first), which is enough for this code base.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field

LIMIT = 100
MARKER = re.compile(r"//\s*structure:\s*data table\s*\(\s*[^)\s][^)]*\)")

# --- lexing -----------------------------------------------------------------


def blank(src: str) -> str:
    """The source with comments, strings and char literals replaced by spaces.

    Newlines are kept, so offsets and line numbers are those of the source; the
    quotes of a string stay, so `""` still reads as an expression.
    """
    out = list(src)
    n = len(src)
    i = 0

    def wipe(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if c == "/" and src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif c == "/" and src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            wipe(i, j)
            i = j
        elif c in "rb" and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            m = re.compile(r'(?:br|rb|r|cr)(#*)"').match(src, i)
            if m:
                close = '"' + m.group(1)
                j = src.find(close, m.end())
                j = n if j < 0 else j + len(close)
                wipe(m.end(), j - len(close))
                i = j
            elif src.startswith('b"', i) or src.startswith("b'", i):
                i += 1  # the literal itself is handled on the next turn
            else:
                i += 1
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            wipe(i + 1, j)
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\'', '\u{1F600}') or a lifetime ('a).
            m = re.compile(r"'(?:\\(?:u\{[0-9a-fA-F_]+\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'").match(src, i)
            if m:
                wipe(i + 1, m.end() - 1)
                i = m.end()
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def match_brace(code: str, open_pos: int) -> int:
    """The offset of the brace closing the one at `open_pos` (or the end)."""
    depth = 0
    for k in range(open_pos, len(code)):
        ch = code[k]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(code) - 1


def item_end(code: str, start: int) -> int:
    """The end (exclusive) of the item starting at `start`: its `;` at depth 0,
    or the brace closing its first top-level `{`."""
    depth = 0
    for k in range(start, len(code)):
        ch = code[k]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and ch == ";":
            return k + 1
        elif depth == 0 and ch == "{":
            return match_brace(code, k) + 1
    return len(code)


ATTR = re.compile(r"#!?\[")
TEST_CFG = re.compile(r"#\[\s*cfg\s*\(\s*(?:test\s*\)|all\s*\(\s*test\b)")


def attr_end(code: str, start: int) -> int:
    """The end of the attribute `#[...]` starting at `start`."""
    depth = 0
    for k in range(code.index("[", start), len(code)):
        if code[k] == "[":
            depth += 1
        elif code[k] == "]":
            depth -= 1
            if depth == 0:
                return k + 1
    return len(code)


def test_spans(code: str) -> list[tuple[int, int]]:
    """The spans of `#[cfg(test)]` items (attributes included)."""
    spans = []
    for m in TEST_CFG.finditer(code):
        if spans and m.start() < spans[-1][1]:
            continue
        k = attr_end(code, m.start())
        while True:  # further attributes of the same item
            ws = re.compile(r"\s*").match(code, k).end()
            if code.startswith("#[", ws):
                k = attr_end(code, ws)
            else:
                k = ws
                break
        spans.append((m.start(), item_end(code, k)))
    return spans


def without(code: str, spans: list[tuple[int, int]]) -> str:
    out = list(code)
    for a, b in spans:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "
    return "".join(out)


# --- the module tree -----------------------------------------------------------


@dataclass
class Module:
    path: tuple[str, ...]  # () for the crate root
    file: str
    code: str  # blanked, test items and child module bodies removed
    offset: int = 0  # where `code` starts in the file's text, for inline modules
    children: dict[str, "Module"] = field(default_factory=dict)
    items: set[str] = field(default_factory=set)
    imports: dict[str, tuple[str, ...]] = field(default_factory=dict)  # name -> absolute path
    globs: list[tuple[str, ...]] = field(default_factory=list)
    refs: dict[tuple[str, ...], int] = field(default_factory=dict)  # absolute path -> first line
    line0: int = 0  # the file's line before `code` starts


MOD_DECL = re.compile(r"\b(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+(r#)?(\w+)\s*([;{])")
ITEM = re.compile(
    r"\b(?:fn|struct|enum|trait|type|const|static|union|macro_rules!)\s+(?:r#)?(\w+)"
)


class Source:
    """Where module files come from: the disk, or a dict for the self-test."""

    def __init__(self, files: dict[str, str] | None = None):
        self.files = files

    def exists(self, path: str) -> bool:
        if self.files is not None:
            return path in self.files
        return os.path.isfile(path)

    def read(self, path: str) -> str:
        if self.files is not None:
            return self.files[path]
        with open(path, encoding="utf-8") as f:
            return f.read()


@dataclass
class Crate:
    name: str
    root: Module
    files: list[tuple[str, str, str]]  # (file, text, blanked code without test items)


def load_module(src: Source, path: tuple[str, ...], file: str, dir_for_children: str,
                text: str, code: str, start: int, end: int, files: list) -> Module:
    """A module whose body is `code[start:end]` of `file`."""
    body = code[start:end]
    mod = Module(path=path, file=file, code="", offset=start, line0=line_of(code, start) - 1)
    cut: list[tuple[int, int]] = []
    for m in MOD_DECL.finditer(body):
        if any(a <= m.start() < b for a, b in cut):
            continue
        name = m.group(2)
        if m.group(3) == "{":
            open_pos = m.end() - 1
            close = match_brace(body, open_pos)
            child = load_module(src, path + (name,), file, os.path.join(dir_for_children, name),
                                text, code, start + open_pos + 1, start + close, files)
            cut.append((m.start(), close + 1))
        else:
            candidates = [os.path.join(dir_for_children, name + ".rs"),
                          os.path.join(dir_for_children, name, "mod.rs")]
            found = next((c for c in candidates if src.exists(c)), None)
            if found is None:
                continue
            ctext = src.read(found)
            ccode = blank(ctext)
            ccode = without(ccode, test_spans(ccode))
            files.append((found, ctext, ccode))
            child_dir = os.path.join(dir_for_children, name)
            child = load_module(src, path + (name,), found, child_dir, ctext, ccode, 0,
                                len(ccode), files)
            cut.append((m.start(), m.end()))
        mod.children[name] = child
    mod.code = without(body, cut)
    mod.items = set(ITEM.findall(mod.code)) | set(mod.children)
    return mod


def load_crate(src: Source, name: str, root_file: str) -> Crate:
    text = src.read(root_file)
    code = without(blank(text), test_spans(blank(text)))
    files = [(root_file, text, code)]
    base = os.path.dirname(root_file)
    root = load_module(src, (), root_file, base, text, code, 0, len(code), files)
    return Crate(name=name, root=root, files=files)


# --- imports ----------------------------------------------------------------

USE = re.compile(r"\buse\s+")
CODE_PATH = re.compile(r"(?<![\w:])(crate|super|self)((?:\s*::\s*(?:r#)?\w+)+)")


def expand_use_tree(tree: str) -> list[tuple[list[str], str | None]]:
    """`a::{b, c::d as e, f::*}` -> [(['a','b'], 'b'), (['a','c','d'], 'e'), (['a','f','*'], None)]."""
    tree = re.sub(r"\s+", " ", tree).strip()
    out: list[tuple[list[str], str | None]] = []

    def split_top(s: str) -> list[str]:
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        return [p.strip() for p in parts if p.strip()]

    def walk(prefix: list[str], s: str) -> None:
        s = s.strip().lstrip(":").strip()
        brace = s.find("{")
        if brace >= 0:
            head = [p.strip() for p in s[:brace].split("::") if p.strip()]
            inner = s[brace + 1 : s.rfind("}")]
            for part in split_top(inner):
                walk(prefix + head, part)
            return
        alias = None
        m = re.match(r"(.*?)\s+as\s+(\w+)$", s)
        if m:
            s, alias = m.group(1), m.group(2)
        segs = [p.strip().removeprefix("r#") for p in s.split("::") if p.strip()]
        full = prefix + segs
        if not full:
            return
        if full[-1] == "self":
            full = full[:-1]
        if not full:
            return
        if full[-1] == "*":
            out.append((full, None))
        else:
            out.append((full, alias or full[-1]))

    walk([], tree)
    return out


def absolute(mod: Module, segs: list[str], crate_root: Module, in_use: bool) -> tuple[str, ...] | None:
    """The crate-absolute path `segs` names from `mod`, or None if outside the crate."""
    if not segs:
        return None
    base = list(mod.path)
    head = segs[0]
    if head == "crate":
        return tuple(segs[1:])
    if head == "self":
        return tuple(base + segs[1:])
    if head == "super":
        k = 0
        while k < len(segs) and segs[k] == "super":
            base = base[:-1]
            k += 1
        return tuple(base + segs[k:])
    # A plain first segment: a child module, or a name in scope (2018 paths).
    if head in mod.children or (in_use and head in mod.items):
        return tuple(base + segs)
    if head in mod.imports:
        return mod.imports[head] + tuple(segs[1:])
    return None


def collect_imports(crate: Crate) -> None:
    def uses(mod: Module):
        for m in USE.finditer(mod.code):
            end = mod.code.find(";", m.end())
            if end < 0:
                continue
            yield m.start(), expand_use_tree(mod.code[m.end():end])

    def first_pass(mod: Module) -> None:
        for _, trees in uses(mod):
            for segs, alias in trees:
                target = absolute(mod, segs, crate.root, in_use=True)
                if target is None:
                    continue
                if alias is None:
                    mod.globs.append(target[:-1])
                else:
                    mod.imports[alias] = target
        for child in mod.children.values():
            first_pass(child)

    def second_pass(mod: Module) -> None:
        for pos, trees in uses(mod):
            for segs, _ in trees:
                target = absolute(mod, segs, crate.root, in_use=True)
                if target is not None:
                    named = tuple(s for s in target if s != "*")
                    mod.refs.setdefault(named, mod.line0 + line_of(mod.code, pos))
        for m in CODE_PATH.finditer(mod.code):
            segs = [m.group(1)] + [s.strip().removeprefix("r#") for s in m.group(2).split("::") if s.strip()]
            target = absolute(mod, segs, crate.root, in_use=False)
            if target is not None:
                mod.refs.setdefault(target, mod.line0 + line_of(mod.code, m.start()))
        for child in mod.children.values():
            second_pass(child)

    first_pass(crate.root)
    second_pass(crate.root)


def resolve(root: Module, path: tuple[str, ...], depth: int = 0) -> tuple[str, ...]:
    """The module a crate-absolute path lands in, following re-exports."""
    mod = root
    for i, seg in enumerate(path):
        if seg in mod.children:
            mod = mod.children[seg]
            continue
        if depth < 8 and seg in mod.imports and seg not in mod.items:
            return resolve(root, mod.imports[seg] + path[i + 1:], depth + 1)
        if depth < 8 and seg not in mod.items:
            for g in mod.globs:
                gm = find(root, g)
                if gm is not None and (seg in gm.items or seg in gm.imports):
                    return resolve(root, g + path[i:], depth + 1)
        return mod.path
    return mod.path


def find(root: Module, path: tuple[str, ...]) -> Module | None:
    mod = root
    for seg in path:
        if seg not in mod.children:
            return None
        mod = mod.children[seg]
    return mod


def all_modules(mod: Module):
    yield mod
    for child in mod.children.values():
        yield from all_modules(child)


def cycles(crate: Crate) -> list[tuple[tuple[str, ...], list[str], list[tuple[str, str]]]]:
    """Every strongly connected component of more than one sibling: (parent, members, edges)."""
    collect_imports(crate)
    edges: dict[tuple[str, ...], set[tuple[str, str]]] = {}
    where: dict[tuple[tuple[str, ...], str, str], str] = {}  # an example of each edge
    for mod in all_modules(crate.root):
        for ref, line in sorted(mod.refs.items(), key=lambda r: r[1]):
            target = resolve(crate.root, ref)
            src = mod.path
            common = 0
            while common < min(len(src), len(target)) and src[common] == target[common]:
                common += 1
            if common == len(src) or common == len(target):
                continue  # an ancestor or a descendant, not a sibling's subtree
            parent = src[:common]
            edges.setdefault(parent, set()).add((src[common], target[common]))
            where.setdefault((parent, src[common], target[common]),
                             f"{mod.file}:{line} names crate::{'::'.join(ref)}")
    found = []
    for parent, es in sorted(edges.items()):
        for comp in scc(es):
            if len(comp) > 1:
                inside = sorted((a, b, where[(parent, a, b)]) for a, b in es
                                if a in comp and b in comp)
                found.append((parent, sorted(comp), inside))
    return found


def scc(edges: set[tuple[str, str]]) -> list[set[str]]:
    """Tarjan's strongly connected components."""
    graph: dict[str, list[str]] = {}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[set[str]] = []
    counter = [0]

    def visit(v: str) -> None:
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
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


# --- long functions ---------------------------------------------------------

FN = re.compile(r"\bfn\s+(?:r#)?(\w+)")


def long_functions(file: str, text: str, code: str) -> list[tuple[str, int, int, str]]:
    """(file, line, length, name) of every function over the limit in one file."""
    lines = text.split("\n")
    found = []
    for m in FN.finditer(code):
        end = item_end(code, m.end())
        if code[end - 1] != "}":
            continue  # a declaration without a body
        first, last = line_of(code, m.start()), line_of(code, end - 1)
        length = last - first + 1
        if length <= LIMIT or marked(lines, first):
            continue
        found.append((file, first, length, m.group(1)))
    return found


def marked(lines: list[str], fn_line: int) -> bool:
    """Whether the marker stands above the function, over its attributes and docs."""
    k = fn_line - 2  # the index of the line above
    while k >= 0:
        s = lines[k].strip()
        if MARKER.search(s):
            return True
        if s.startswith("#[") or s.startswith("///") or s.startswith("//") or s.endswith(")]"):
            k -= 1
            continue
        return False
    return False


# --- the workspace ----------------------------------------------------------


def workspace_crates(src: Source, roots: list[tuple[str, str]]) -> list[Crate]:
    return [load_crate(src, name, f) for name, f in roots]


def crate_roots(repo: str) -> list[tuple[str, str]]:
    """(crate name, root file) for the root package and every crates/*."""
    roots = []
    dirs = [repo] + sorted(os.path.join(repo, "crates", d) for d in os.listdir(os.path.join(repo, "crates"))
                           if os.path.isfile(os.path.join(repo, "crates", d, "Cargo.toml")))
    for d in dirs:
        name = package_name(os.path.join(d, "Cargo.toml")) or os.path.basename(d)
        rel = os.path.relpath(d, repo)
        for kind in ("lib.rs", "main.rs"):
            f = os.path.join(rel, "src", kind)
            if os.path.isfile(os.path.join(repo, f)):
                label = name if kind == "lib.rs" else f"{name} (bin)"
                roots.append((label, os.path.normpath(f)))
        bindir = os.path.join(d, "src", "bin")
        if os.path.isdir(bindir):
            for b in sorted(os.listdir(bindir)):
                f = os.path.join(rel, "src", "bin", b)
                if b.endswith(".rs"):
                    roots.append((f"{name} (bin {b[:-3]})", os.path.normpath(f)))
                elif os.path.isfile(os.path.join(repo, f, "main.rs")):
                    roots.append((f"{name} (bin {b})", os.path.normpath(os.path.join(f, "main.rs"))))
    return roots


def package_name(cargo_toml: str) -> str | None:
    try:
        with open(cargo_toml, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r"^\[package\][^\[]*?^name\s*=\s*\"([^\"]+)\"", text, re.M | re.S)
    return m.group(1) if m else None


def check(crates: list[Crate]):
    """(cycles, long functions) per crate, in order."""
    results = []
    seen_files: set[str] = set()
    for crate in crates:
        cyc = cycles(crate)
        longs = []
        for file, text, code in crate.files:
            if file in seen_files:
                continue  # a file shared by the lib and a bin is counted once
            seen_files.add(file)
            longs.extend(long_functions(file, text, code))
        results.append((crate, cyc, longs))
    return results


def render(results, list_counts: bool) -> tuple[int, str]:
    out = []
    n_cyc = sum(len(c) for _, c, _ in results)
    n_long = sum(len(l) for _, _, l in results)
    for crate, cyc, longs in results:
        if list_counts:
            out.append(f"{crate.name}: {len(cyc)} cycle(s), {len(longs)} function(s) over {LIMIT} lines")
        for parent, members, es in cyc:
            where = "crate::" + "::".join(parent) if parent else "crate"
            out.append(f"  cycle in {crate.name} under {where}: {{{', '.join(members)}}}")
            for a, b, example in es:
                out.append(f"    {a} -> {b}  (e.g. {example})")
        for file, line, length, name in sorted(longs):
            out.append(f"  long function in {crate.name}: {file}:{line} {name} ({length} lines)")
    summary = (f"structure: {len(results)} crates, {n_cyc} sibling-module cycle(s), "
               f"{n_long} shipped function(s) over {LIMIT} lines")
    if n_cyc or n_long:
        out.append(summary)
        out.append(f"structure: failed (break the cycles; split the functions, or mark a true data "
                   f"table with `// structure: data table (why)` on the line above it)")
        return 1, "\n".join(out)
    out.append(summary)
    return 0, "\n".join(out)


# --- the self-test ----------------------------------------------------------


def self_test() -> int:
    body = "\n".join(f"    let x{i} = {i};" for i in range(LIMIT))
    long_fn = "pub fn long() {\n" + body + "\n}\n"
    files = {
        "src/lib.rs": (
            "//! A sample.\n"
            "mod a;\nmod b;\nmod c;\npub mod d;\nmod e;\n"
            "#[cfg(test)]\nmod tests;\n"
            "pub use e::Thing;\n"
        ),
        # a <-> b, through a nested `use` group and a path in code.
        "src/a.rs": "use crate::{b::B, c};\npub struct A;\npub fn f() { c::g(); }\n",
        "src/b.rs": "pub struct B;\npub fn h() -> crate::a::A { crate::a::A }\n",
        # c uses a, a uses c: a second pair, so {a, b, c} is one component.
        "src/c.rs": "pub fn g() { let _ = super::a::A; let s = \"crate::e::Thing {\"; let c = '{'; }\n",
        # d/mod.rs with children that form a cycle through `super::`, and a
        # long function marked as a data table.
        "src/d/mod.rs": (
            "mod x;\nmod y;\n"
            "// structure: data table (a sample table)\n"
            "#[allow(dead_code)]\n" + long_fn.replace("long", "table")
        ),
        "src/d/x.rs": "use super::y::Y;\npub struct X;\n",
        "src/d/y.rs": "pub struct Y;\nfn k() -> super::x::X { super::x::X }\n",
        # e: a long unmarked function, a marker without a reason, and a
        # test-only module and function that name a (no edge e -> a).
        "src/e.rs": (
            "pub struct Thing;\n" + long_fn
            + "// structure: data table ()\n" + long_fn.replace("long", "unreasoned")
            + "/* fn fake() { */\n"
            "#[cfg(test)]\nmod tests {\n    use crate::a::A;\n" + long_fn + "}\n"
            "#[cfg(test)]\nfn helper() -> crate::a::A { crate::a::A }\n"
        ),
        # A test-only file: neither its long function nor its imports count.
        "src/tests.rs": "use crate::a::A;\n" + long_fn,
        # Siblings naming each other only through the root's re-export: f -> e via
        # `crate::Thing`, no cycle (e does not name f).
        "src/f.rs": "use crate::Thing;\n",
    }
    # g.rs beside g/: its children form a cycle through a path to their parent.
    files["src/g.rs"] = "mod h;\nmod i;\n"
    files["src/g/h.rs"] = "use super::i::I;\npub struct H;\n"
    files["src/g/i.rs"] = "pub struct I;\npub fn j() { let _ = crate::g::h::H; }\n"
    # p and q: a cycle only through a re-export at the root (`crate::Q` is q's).
    files["src/p.rs"] = "pub struct P;\npub fn p() -> crate::Q { crate::Q }\n"
    files["src/q.rs"] = "pub struct Q;\nimpl Q { pub fn p(&self) -> super::p::P { super::p::P } }\n"
    files["src/lib.rs"] += "mod f;\nmod g;\nmod p;\nmod q;\npub use q::Q;\n"
    crate = load_crate(Source(files), "sample", "src/lib.rs")
    (_, cyc, longs), = check([crate])
    got_cycles = {("::".join(p), tuple(m)) for p, m, _ in cyc}
    want_cycles = {("", ("a", "b", "c")), ("", ("p", "q")), ("d", ("x", "y")), ("g", ("h", "i"))}
    failures = []
    if got_cycles != want_cycles:
        failures.append(f"cycles: got {sorted(got_cycles)}, want {sorted(want_cycles)}")
    got_long = sorted((f, name, length) for f, _, length, name in longs)
    want_long = [("src/e.rs", "long", LIMIT + 2), ("src/e.rs", "unreasoned", LIMIT + 2)]
    if got_long != want_long:
        failures.append(f"long functions: got {got_long}, want {want_long}")
    # f -> e through the re-export, and no edge from e to a (test-only code).
    root_edges = {(a, b) for p, m, es in cyc if p == () for a, b, _ in es}
    if ("e", "a") in root_edges:
        failures.append("an edge e -> a from test-only code")
    # The lexer: strings, chars, lifetimes, raw strings and nested comments.
    lex = blank("fn a<'a>(x: &'a str) { let _ = r#\"}\"#; let _ = '}'; /* /* } */ } */ }")
    if lex.count("{") != lex.count("}"):
        failures.append(f"the lexer leaves unbalanced braces: {lex!r}")
    # A clean crate passes.
    clean = load_crate(Source({"src/lib.rs": "mod a;\nmod b;\n", "src/a.rs": "use crate::b::B;\n",
                               "src/b.rs": "pub struct B;\n"}), "clean", "src/lib.rs")
    code, _ = render(check([clean]), False)
    if code != 0:
        failures.append("a clean crate fails")
    code, _ = render(check([crate]), False)
    if code != 1:
        failures.append("the sample crate passes")
    if failures:
        print("structure self-test: FAILED", file=sys.stderr)
        for f in failures:
            print("  " + f, file=sys.stderr)
        return 1
    print("structure self-test: ok (cycles, long functions, markers, test-only code, the lexer)")
    return 0


def main(argv: list[str]) -> int:
    if "--self-test" in argv:
        return self_test()
    unknown = [a for a in argv if a not in ("--list",)]
    if unknown:
        print(f"usage: scripts/structure.py [--list | --self-test] (unknown: {' '.join(unknown)})",
              file=sys.stderr)
        return 2
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    crates = workspace_crates(Source(), crate_roots("."))
    code, text = render(check(crates), "--list" in argv)
    print(text, file=sys.stderr if code else sys.stdout)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
