#!/usr/bin/env python3
"""The public API of a crate, one line per item, from nightly rustdoc's JSON.

    scripts/public_api.py CRATE.json -o LISTING [--min-public N] [--min-hidden N]
    scripts/public_api.py --self-test

scripts/public-api.sh builds the JSON (`cargo +nightly rustdoc ... --output-format
json --document-hidden-items`) and diffs the listing against api/mrtr.txt.

Every item reachable from the crate root is listed under the path a user writes
(`mrtr::seal::Sealer`), followed by its kind and, for functions, its signature:
modules, structs (and their pub fields), enums (and their variants), unions,
traits (and their items), functions, constants, statics, type aliases, macros,
the methods, associated types and constants of the inherent impls, the trait
impls of the crate's types (the auto traits Send, Sync, Unpin, UnwindSafe and
RefUnwindSafe included; blanket impls from other crates, such as `From<T> for
T`, left out) with their items, the impls of the crate's traits, and each
re-export as `PATH re-export TARGET`. An item reachable under several paths is
listed under one (a path through modules only, not through a `use`, when there
is one; then the shortest; then the first in sort order) and every other `use`
that reaches it is a re-export line. Types in signatures are written with the
same paths; another crate's types as `crate::Name` (std, core and alloc ones as
`Name`).

Items marked `#[doc(hidden)]`, and everything reachable only through one (the
core's `__private`), are listed in a second section: they carry no semver
promise, but a new one is a reviewed diff too.

Stdlib only. The JSON format changes with the nightly: an unknown
`format_version` is refused (set PUBLIC_API_ANY_FORMAT=1 to try anyway).
"""
import argparse
import json
import os
import re
import sys

# The rustdoc JSON format versions this parser was written against and checked on.
KNOWN_FORMATS = {57}

# The stable auto traits; rustdoc also synthesises impls of unstable ones
# (Freeze, UnsafeUnpin), which come and go with the nightly.
AUTO_TRAITS = {"Send", "Sync", "Unpin", "UnwindSafe", "RefUnwindSafe"}

# Unstable marker traits that derives implement (derive(PartialEq)), left out
# like the hidden impls and items derives add (TrivialClone, assert_fields_are_eq).
DERIVE_MARKERS = {"StructuralPartialEq"}

# Another crate's type is written `krate::Name`, except these crates' (`Name`).
STD_CRATES = {"std", "core", "alloc"}

HEADER = """\
# The public API of the mrtr crate (all features), one line per item, sorted by path.
# Written by scripts/public-api.sh --bless from nightly rustdoc's JSON; CI fails when
# it differs from the code. A line is `PATH KIND[ DETAILS]`; `(impl ...)` names the
# impl block a method comes from; see scripts/public_api.py for what is listed.
"""
HIDDEN_HEADER = """\
# Hidden: #[doc(hidden)] items, and everything reachable only through one (such as
# mrtr::__private); the sibling crates use them, they carry no semver promise.
"""


class ApiError(Exception):
    pass


def only_key(value, what):
    """The single key of an externally tagged enum value (a dict with one key)."""
    if isinstance(value, str):
        return value, None
    if isinstance(value, dict) and len(value) == 1:
        key = next(iter(value))
        return key, value[key]
    raise ApiError(f"unexpected {what}: {json.dumps(value)[:200]}")


HIDDEN_RE = re.compile(r"doc\s*\(\s*hidden\s*\)|\bDoc\b.*\bhidden\b", re.IGNORECASE)


def is_hidden(item):
    for attr in item.get("attrs") or []:
        if HIDDEN_RE.search(attr if isinstance(attr, str) else json.dumps(attr)):
            return True
    return False


def is_non_exhaustive(item):
    for attr in item.get("attrs") or []:
        text = attr if isinstance(attr, str) else json.dumps(attr)
        if "non_exhaustive" in text:
            return True
    return False


class Crate:
    def __init__(self, doc):
        version = doc.get("format_version")
        if version not in KNOWN_FORMATS and not os.environ.get("PUBLIC_API_ANY_FORMAT"):
            raise ApiError(
                f"rustdoc JSON format_version {version!r} is not one this script knows "
                f"({', '.join(map(str, sorted(KNOWN_FORMATS)))}): the nightly changed it. "
                "Check scripts/public_api.py against the new format (the rustdoc-types "
                "changelog says what changed), then add it to KNOWN_FORMATS "
                "(PUBLIC_API_ANY_FORMAT=1 tries the parser on it anyway)"
            )
        self.index = doc["index"]
        self.paths = doc.get("paths") or {}
        self.root = str(doc["root"])
        self.crate_name = self.index[self.root]["name"]
        # id -> [(hidden, reached through a use, length, path, the last step a use)]
        self.candidates = {}
        # The impls of the crate's traits, listed after every type's own impls: an
        # impl of a local trait for a local type is listed under the type.
        self.trait_impls = []
        self.public = []
        self.hidden = []
        self.done_impls = set()

    def item(self, id_):
        return self.index.get(str(id_)) if id_ is not None else None

    def local(self, id_):
        item = self.item(id_)
        return item is not None and item.get("crate_id") == 0

    # --- reachability ----------------------------------------------------

    def walk(self, module_id, prefix, hidden, uses, stack):
        module = self.item(module_id)
        if module is None or str(module_id) in stack:
            return
        stack = stack | {str(module_id)}
        for child_id in module["inner"]["module"].get("items", []):
            child = self.item(child_id)
            if child is None or child.get("visibility") != "public":
                continue
            kind, inner = only_key(child["inner"], "item kind")
            child_hidden = hidden or is_hidden(child)
            if kind == "use":
                self.walk_use(child, inner, prefix, child_hidden, uses, stack)
                continue
            if kind in ("impl", "primitive") or not child.get("name"):
                continue
            path = prefix + [child["name"]]
            self.add_candidate(child_id, child_hidden, uses, path, False)
            if kind == "module":
                self.walk(child_id, path, child_hidden, uses, stack)

    def walk_use(self, use_item, use, prefix, hidden, uses, stack):
        target_id = use.get("id")
        target = self.item(target_id) if self.local(target_id) else None
        if use.get("is_glob"):
            if target is None:
                self.emit(hidden, prefix + ["*"], "re-export " + self.external_path(target_id, use.get("source")) + "::*")
                return
            kind, inner = only_key(target["inner"], "item kind")
            if kind == "module":
                self.walk(target_id, prefix, hidden, uses + 1, stack)
            elif kind == "enum":
                for variant_id in inner.get("variants", []):
                    variant = self.item(variant_id)
                    if variant is not None:
                        self.add_candidate(variant_id, hidden, uses + 1, prefix + [variant["name"]], True)
            return
        path = prefix + [use["name"]]
        if target is None:
            self.emit(hidden, path, "re-export " + self.external_path(target_id, use.get("source")))
            return
        self.add_candidate(target_id, hidden, uses + 1, path, True)
        if only_key(target["inner"], "item kind")[0] == "module":
            self.walk(target_id, path, hidden, uses + 1, stack)

    def add_candidate(self, id_, hidden, uses, path, via_use):
        self.candidates.setdefault(str(id_), []).append((hidden, uses > 0, len(path), path, via_use))

    def canonical(self, id_):
        """The path an item is listed under: not hidden if it can be; then the
        one whose module is nearest the module that defines the item (read from
        its source file: `Keyring`, defined in src/seal/keyring.rs, is listed as
        mrtr::seal::Keyring, and mrtr::Keyring is a re-export); then one through
        modules only; then the longest; then the first in sort order."""
        found = self.candidates.get(str(id_))
        if not found:
            return None
        home = self.home_module(id_)

        def near(c):
            parent = c[3][1:-1]
            common = 0
            while common < min(len(parent), len(home)) and parent[common] == home[common]:
                common += 1
            return common

        return min(found, key=lambda c: (c[0], -near(c), c[1], -c[2], c[3]))

    def home_module(self, id_):
        """The module path a source file stands for (src/seal/keyring.rs:
        ["seal", "keyring"]), or [] when the span says nothing."""
        span = (self.item(id_) or {}).get("span") or {}
        name = (span.get("filename") or "").replace("\\", "/")
        if "src/" not in name or not name.endswith(".rs"):
            return []
        parts = name.split("src/", 1)[1][: -len(".rs")].split("/")
        if parts[-1] in ("mod", "lib", "main"):
            parts = parts[:-1]
        return parts

    def path_of(self, id_):
        """How a signature names an item: its listed path, else rustdoc's."""
        best = self.canonical(id_)
        if best is not None:
            return "::".join(best[3])
        return None

    def external_path(self, id_, written=None):
        summary = self.paths.get(str(id_))
        if summary and summary.get("path"):
            segments = summary["path"]
            if summary.get("crate_id") == 0:
                return "::".join(segments)
            if segments[0] in STD_CRATES:
                return segments[-1]
            return segments[0] + "::" + segments[-1]
        return written or "?"

    # --- rendering types -------------------------------------------------

    def name_path(self, path):
        """A rustdoc `Path` (`{path, id, args}`) as written in a signature."""
        id_ = path.get("id")
        name = None
        if self.local(id_):
            name = self.path_of(id_)
        if name is None:
            written = path.get("path") or path.get("name") or ""
            name = self.external_path(id_, written)
            if name == "?":
                name = written.split("::")[-1] or "?"
        return name + self.generic_args(path.get("args"))

    def generic_args(self, args):
        if not args:
            return ""
        kind, inner = only_key(args, "generic args")
        if kind == "angle_bracketed":
            parts = []
            for arg in inner.get("args", []):
                akind, value = only_key(arg, "generic arg")
                if akind == "lifetime":
                    parts.append(value)
                elif akind == "type":
                    parts.append(self.ty(value))
                elif akind == "const":
                    parts.append(value.get("expr") or value.get("value") or "_")
                elif akind == "infer":
                    parts.append("_")
                else:
                    raise ApiError(f"unknown generic arg {akind}")
            for constraint in inner.get("constraints", inner.get("bindings", [])):
                parts.append(self.constraint(constraint))
            return "<" + ", ".join(parts) + ">" if parts else ""
        if kind == "parenthesized":
            out = "(" + ", ".join(self.ty(t) for t in inner.get("inputs", [])) + ")"
            if inner.get("output") is not None:
                out += " -> " + self.ty(inner["output"])
            return out
        if kind == "return_type_notation":
            return "(..)"
        raise ApiError(f"unknown generic args {kind}")

    def constraint(self, constraint):
        name = constraint["name"] + self.generic_args(constraint.get("args"))
        kind, value = only_key(constraint["binding"], "constraint")
        if kind == "equality":
            tkind, term = only_key(value, "term")
            return f"{name} = " + (self.ty(term) if tkind == "type" else (term.get("expr") or "_"))
        if kind == "constraint":
            return f"{name}: " + self.bounds(value)
        raise ApiError(f"unknown constraint {kind}")

    def ty(self, t):
        kind, v = only_key(t, "type")
        if kind == "resolved_path":
            return self.name_path(v)
        if kind in ("generic", "primitive"):
            return v
        if kind == "infer":
            return "_"
        if kind == "tuple":
            inner = ", ".join(self.ty(x) for x in v)
            return f"({inner},)" if len(v) == 1 else f"({inner})"
        if kind == "slice":
            return f"[{self.ty(v)}]"
        if kind == "array":
            return f"[{self.ty(v['type'])}; {v['len']}]"
        if kind == "pat":
            return self.ty(v["type"]) + " is _"
        if kind == "borrowed_ref":
            lifetime = v.get("lifetime")
            out = "&" + (lifetime + " " if lifetime else "")
            out += "mut " if v.get("is_mutable", v.get("mutable")) else ""
            return out + self.ty(v["type"])
        if kind == "raw_pointer":
            return ("*mut " if v.get("is_mutable", v.get("mutable")) else "*const ") + self.ty(v["type"])
        if kind == "impl_trait":
            return "impl " + self.bounds(v)
        if kind == "dyn_trait":
            parts = [self.hrtb(p.get("generic_params")) + self.name_path(p["trait"]) for p in v.get("traits", [])]
            if v.get("lifetime"):
                parts.append(v["lifetime"])
            return "dyn " + " + ".join(parts)
        if kind == "function_pointer":
            header = self.header(v.get("header") or {})
            sig = v["sig"]
            args = ", ".join(self.ty(a[1]) for a in sig.get("inputs", []))
            out = self.hrtb(v.get("generic_params")) + header + f"fn({args})"
            if sig.get("output") is not None:
                out += " -> " + self.ty(sig["output"])
            return out
        if kind == "qualified_path":
            name = v["name"] + self.generic_args(v.get("args"))
            self_ty = self.ty(v["self_type"])
            if v.get("trait"):
                return f"<{self_ty} as {self.name_path(v['trait'])}>::{name}"
            return f"{self_ty}::{name}"
        raise ApiError(f"unknown type kind {kind}")

    def hrtb(self, params):
        if not params:
            return ""
        return "for<" + ", ".join(self.param(p) for p in params) + "> "

    def bound(self, b):
        kind, v = only_key(b, "bound")
        if kind == "trait_bound":
            modifier = {"maybe": "?", "maybe_const": "~const "}.get(v.get("modifier"), "")
            return self.hrtb(v.get("generic_params")) + modifier + self.name_path(v["trait"])
        if kind == "outlives":
            return v
        if kind == "use":
            names = []
            for arg in v:
                names.append(only_key(arg, "precise capture")[1] if isinstance(arg, dict) else arg)
            return "use<" + ", ".join(names) + ">"
        raise ApiError(f"unknown bound {kind}")

    def bounds(self, bounds):
        return " + ".join(self.bound(b) for b in bounds)

    def param(self, p):
        kind, v = only_key(p["kind"], "generic param")
        if kind == "lifetime":
            outlives = v.get("outlives") or []
            return p["name"] + (": " + " + ".join(outlives) if outlives else "")
        if kind == "type":
            out = p["name"] + (": " + self.bounds(v["bounds"]) if v.get("bounds") else "")
            return out + (" = " + self.ty(v["default"]) if v.get("default") else "")
        if kind == "const":
            out = "const " + p["name"] + ": " + self.ty(v["type"])
            return out + (" = " + v["default"] if v.get("default") else "")
        raise ApiError(f"unknown generic param {kind}")

    def generics(self, g):
        """`<params>` and ` where ...` of a Generics, without the synthetic params of
        `impl Trait` arguments."""
        g = g or {}
        params = [
            p for p in g.get("params", [])
            if not (only_key(p["kind"], "generic param")[0] == "type"
                    and only_key(p["kind"], "generic param")[1].get("is_synthetic"))
        ]
        head = "<" + ", ".join(self.param(p) for p in params) + ">" if params else ""
        preds = []
        for pred in g.get("where_predicates", []):
            kind, v = only_key(pred, "where predicate")
            if kind == "bound_predicate":
                preds.append(self.hrtb(v.get("generic_params")) + self.ty(v["type"]) + ": " + self.bounds(v["bounds"]))
            elif kind in ("lifetime_predicate", "region_predicate"):
                preds.append(v["lifetime"] + ": " + " + ".join(v.get("outlives") or []))
            elif kind == "eq_predicate":
                tkind, rhs = only_key(v["rhs"], "term")
                preds.append(self.ty(v["lhs"]) + " = " + (self.ty(rhs) if tkind == "type" else rhs.get("expr", "_")))
            else:
                raise ApiError(f"unknown where predicate {kind}")
        tail = " where " + ", ".join(preds) if preds else ""
        return head, tail

    @staticmethod
    def header(h):
        out = ""
        if h.get("is_const"):
            out += "const "
        if h.get("is_async"):
            out += "async "
        if h.get("is_unsafe"):
            out += "unsafe "
        abi = h.get("abi", "Rust")
        if abi != "Rust":
            out += f'extern "{abi if isinstance(abi, str) else only_key(abi, "abi")[0]}" '
        return out

    def signature(self, func):
        head, tail = self.generics(func.get("generics"))
        sig = func["sig"]
        args = []
        for name, t in sig.get("inputs", []):
            if name == "self":
                args.append(self.self_arg(t))
            else:
                args.append(f"{name}: {self.ty(t)}")
        if sig.get("is_c_variadic"):
            args.append("...")
        out = self.header(func.get("header") or {}) + f"fn{head}(" + ", ".join(args) + ")"
        if sig.get("output") is not None:
            out += " -> " + self.ty(sig["output"])
        return out + tail

    def self_arg(self, t):
        kind, v = only_key(t, "type")
        if kind == "generic" and v == "Self":
            return "self"
        if kind == "borrowed_ref" and v["type"] == {"generic": "Self"}:
            lifetime = v.get("lifetime")
            mut = "mut " if v.get("is_mutable", v.get("mutable")) else ""
            return "&" + (lifetime + " " if lifetime else "") + mut + "self"
        return "self: " + self.ty(t)

    # --- listing ---------------------------------------------------------

    def emit(self, hidden, path, text):
        """One line: the path, a space, then the kind and the details."""
        (self.hidden if hidden else self.public).append("::".join(path) + " " + text)

    def listing(self):
        root = self.index[self.root]
        self.walk(self.root, [self.crate_name], is_hidden(root), 0, frozenset())
        for id_ in sorted(self.candidates, key=lambda k: (len(k), k)):
            best = self.canonical(id_)
            for cand in self.candidates[id_]:
                if cand is not best and cand[4]:
                    self.emit(cand[0], cand[3], "re-export " + "::".join(best[3]))
            self.describe(id_, best[3], best[0])
        for impl_ids, path, hidden in self.trait_impls:
            self.impls(impl_ids, path, hidden, of_trait=True)
        return sorted(self.public), sorted(self.hidden)

    def describe(self, id_, path, hidden):
        item = self.item(id_)
        kind, v = only_key(item["inner"], "item kind")
        if kind == "module":
            self.emit(hidden, path, "mod")
        elif kind in ("struct", "union"):
            head, tail = self.generics(v.get("generics"))
            shape = ""
            skind, sv = only_key(v["kind"], "struct kind") if kind == "struct" else ("plain", v)
            if skind == "tuple":
                shape = "(" + ", ".join(self.field_type(f) for f in sv) + ")"
            elif skind == "plain":
                self.fields(sv, path, hidden)
                if sv.get("has_stripped_fields"):
                    shape = " { .. }"
            marks = " #[non_exhaustive]" if is_non_exhaustive(item) else ""
            self.emit(hidden, path, kind + head + shape + tail + marks)
            self.impls(v.get("impls", []), path, hidden)
        elif kind == "enum":
            head, tail = self.generics(v.get("generics"))
            marks = " #[non_exhaustive]" if is_non_exhaustive(item) else ""
            if v.get("has_stripped_variants"):
                marks += " (some variants hidden)"
            self.emit(hidden, path, "enum" + head + tail + marks)
            for variant_id in v.get("variants", []):
                if self.canonical(variant_id) is None:
                    self.variant(variant_id, path, hidden)
            self.impls(v.get("impls", []), path, hidden)
        elif kind == "variant":
            self.variant(id_, path[:-1], hidden, path)
        elif kind == "function":
            self.emit(hidden, path, self.signature(v))
        elif kind == "trait":
            head, tail = self.generics(v.get("generics"))
            prefix = ("unsafe " if v.get("is_unsafe") else "") + ("auto " if v.get("is_auto") else "")
            supers = ": " + self.bounds(v["bounds"]) if v.get("bounds") else ""
            dyn = "" if v.get("is_dyn_compatible", v.get("is_object_safe", True)) else " (not dyn-compatible)"
            self.emit(hidden, path, prefix + "trait" + head + supers + tail + dyn)
            for member_id in v.get("items", []):
                member = self.item(member_id)
                if member is not None:
                    self.member(member, path, hidden or is_hidden(member), trait_item=True)
            self.trait_impls.append((v.get("implementations", []), path, hidden))
        elif kind == "trait_alias":
            head, tail = self.generics(v.get("generics"))
            self.emit(hidden, path, "trait" + head + " = " + self.bounds(v.get("params", [])) + tail)
        elif kind == "type_alias":
            head, tail = self.generics(v.get("generics"))
            self.emit(hidden, path, "type" + head + " = " + self.ty(v["type"]) + tail)
        elif kind == "constant":
            self.emit(hidden, path, "const: " + self.ty(v["type"]))
        elif kind == "static":
            mut = "mut " if v.get("is_mutable", v.get("mutable")) else ""
            self.emit(hidden, path, "static: " + mut + self.ty(v["type"]))
        elif kind in ("macro", "proc_macro"):
            self.emit(hidden, path, "macro")
        elif kind == "extern_crate":
            self.emit(hidden, path, "extern crate")
        elif kind == "extern_type":
            self.emit(hidden, path, "extern type")
        elif kind == "struct_field":
            pass  # listed with its struct
        else:
            raise ApiError(f"unknown item kind {kind} at {'::'.join(path)}")

    def field_type(self, field_id, of_variant=False):
        field = self.item(field_id)
        if field is None or (not of_variant and field.get("visibility") != "public"):
            return "_"
        return ("#[doc(hidden)] " if is_hidden(field) else "") + self.ty(field["inner"]["struct_field"])

    def fields(self, plain, path, hidden):
        for field_id in plain.get("fields", []):
            field = self.item(field_id)
            if field is None:
                continue
            self.emit(hidden or is_hidden(field), path + [field["name"]], "field: " + self.ty(field["inner"]["struct_field"]))

    def variant(self, variant_id, enum_path, hidden, path=None):
        variant = self.item(variant_id)
        if variant is None:
            return
        path = path or enum_path + [variant["name"]]
        hidden = hidden or is_hidden(variant)
        v = variant["inner"]["variant"]
        kind, shape = only_key(v["kind"], "variant kind")
        details = ""
        if kind == "tuple":
            details = "(" + ", ".join(self.field_type(f, of_variant=True) for f in shape) + ")"
        elif kind == "struct":
            self.fields(shape, path, hidden)
            details = " { .. }" if shape.get("has_stripped_fields") else " {}"
        if v.get("discriminant"):
            details += " = " + v["discriminant"].get("expr", "_")
        self.emit(hidden, path, "variant" + details)

    def member(self, member, owner_path, hidden, trait_item=False, note=""):
        """An item of a trait or an impl block, listed under its owner."""
        kind, v = only_key(member["inner"], "item kind")
        path = owner_path + [member["name"]]
        if kind == "function":
            provided = " (provided)" if trait_item and v.get("has_body") else ""
            self.emit(hidden, path, self.signature(v) + provided + note)
        elif kind == "assoc_type":
            head, tail = self.generics(v.get("generics"))
            details = head
            if v.get("bounds"):
                details += ": " + self.bounds(v["bounds"])
            if v.get("type") is not None:
                details += (" (default " if trait_item else " = ") + self.ty(v["type"]) + (")" if trait_item else "")
            self.emit(hidden, path, "type" + details + tail + note)
        elif kind == "assoc_const":
            provided = " (provided)" if trait_item and v.get("value") is not None else ""
            self.emit(hidden, path, "const: " + self.ty(v["type"]) + provided + note)
        else:
            raise ApiError(f"unknown associated item kind {kind} at {'::'.join(path)}")

    def impls(self, impl_ids, owner_path, hidden, of_trait=False):
        owner = "::".join(owner_path)
        for impl_id in impl_ids:
            if str(impl_id) in self.done_impls:
                continue
            self.done_impls.add(str(impl_id))
            item = self.item(impl_id)
            if item is None:
                continue
            imp = item["inner"]["impl"]
            trait = imp.get("trait")
            impl_hidden = hidden or is_hidden(item)
            if trait is None:  # inherent: its pub items
                head, tail = self.generics(imp.get("generics"))
                note = f" (impl{head} {self.ty(imp['for'])}{tail})" if head or tail else ""
                for member_id in imp.get("items", []):
                    member = self.item(member_id)
                    if member is not None and member.get("visibility") == "public":
                        self.member(member, owner_path, impl_hidden or is_hidden(member), note=note)
                continue
            trait_name = trait.get("path", "").split("::")[-1]
            foreign = not self.local(trait.get("id"))
            if imp.get("is_synthetic") and trait_name not in AUTO_TRAITS:
                continue
            # What derives add for the compiler's sake (hidden, or unstable markers).
            if foreign and (is_hidden(item) or trait_name in DERIVE_MARKERS):
                continue
            if imp.get("blanket_impl") is not None and not self.local(trait.get("id")):
                continue
            if not of_trait and imp.get("blanket_impl") is None and self.is_foreign_trait_for_foreign_type(imp):
                continue
            head, tail = self.generics(imp.get("generics"))
            bang = "!" if imp.get("is_negative") else ""
            for_ty = self.ty(imp["for"])
            if of_trait:
                text = f"impl{head} {bang}{self.name_path(trait)} for {for_ty}{tail}"
            else:
                text = f"impl{head} {bang}{self.name_path(trait)}"
                text += ("" if for_ty == owner else f" for {for_ty}") + tail
            self.emit(impl_hidden, owner_path, text)
            note = f" ({text})"
            for member_id in imp.get("items", []):
                member = self.item(member_id)
                if member is None or (foreign and is_hidden(member)):
                    continue  # such as Eq's assert_fields_are_eq
                self.member(member, owner_path, impl_hidden or is_hidden(member), note=note)

    def is_foreign_trait_for_foreign_type(self, imp):
        kind, v = only_key(imp["for"], "type")
        return kind == "resolved_path" and not self.local(v.get("id")) and not self.local(imp["trait"].get("id"))


def list_api(doc):
    crate = Crate(doc)
    return crate.listing()


def render(public, hidden):
    out = HEADER + "\n" + "\n".join(public) + "\n"
    out += "\n" + HIDDEN_HEADER + "\n" + "\n".join(hidden) + ("\n" if hidden else "")
    return out


# --- self-test -----------------------------------------------------------

def sample():
    """A tiny crate `demo`, in the JSON shape of format 57:

        pub mod outer {
            pub struct Thing { pub size: u32, secret: u8 }
            impl Thing { pub fn new(size: u32) -> Self; pub fn size(&self) -> u32; fn private(); }
            impl Clone for Thing {}         // derived
            // and rustdoc's synthetic Send, and a blanket From<T> for T
            pub enum Mode { Fast, Slow(String) }
            pub trait Speak { fn speak(&self) -> String; }
        }
        mod private { pub fn helper<T: Clone>(value: &T) -> Option<T>; }
        pub use outer::Thing as Alias;      // a second path
        pub use private::helper;            // the only path
        #[doc(hidden)] pub mod __private { pub use crate::outer::Mode; pub const DOOR: u8; }
    """
    def item(id_, name, inner, visibility="public", attrs=None):
        return str(id_), {"id": id_, "crate_id": 0, "name": name, "visibility": visibility,
                          "attrs": attrs or [], "docs": None, "links": {}, "span": None,
                          "deprecation": None, "inner": inner}

    def path(p, id_, args=None):
        return {"resolved_path": {"path": p, "id": id_, "args": args}}

    no_generics = {"params": [], "where_predicates": []}
    header = {"is_const": False, "is_unsafe": False, "is_async": False, "abi": "Rust"}

    def fn(inputs, output, generics=no_generics):
        return {"function": {"sig": {"inputs": inputs, "output": output, "is_c_variadic": False},
                             "generics": generics, "header": header, "has_body": True}}

    def impl(trait, for_, items, synthetic=False, blanket=None, generics=no_generics):
        return {"impl": {"is_unsafe": False, "generics": generics, "provided_trait_methods": [],
                         "trait": trait, "for": for_, "items": items, "is_negative": False,
                         "is_synthetic": synthetic, "blanket_impl": blanket}}

    t_param = {"params": [{"name": "T", "kind": {"type": {"bounds": [{"trait_bound": {
        "trait": {"path": "Clone", "id": 900, "args": None}, "generic_params": [], "modifier": "none"}}],
        "default": None, "is_synthetic": False}}}], "where_predicates": []}
    index = dict([
        item(0, "demo", {"module": {"is_crate": True, "items": [1, 20, 30, 31, 40], "is_stripped": False}}),
        item(1, "outer", {"module": {"is_crate": False, "items": [2, 10, 15], "is_stripped": False}}),
        item(2, "Thing", {"struct": {"kind": {"plain": {"fields": [3], "has_stripped_fields": True}},
                                     "generics": no_generics, "impls": [4, 7, 8, 9]}}),
        item(3, "size", {"struct_field": {"primitive": "u32"}}),
        item(4, None, impl(None, path("Thing", 2), [5, 6, 50]), visibility="default"),
        item(5, "new", fn([["size", {"primitive": "u32"}]], {"generic": "Self"})),
        item(6, "size", fn([["self", {"borrowed_ref": {"lifetime": None, "is_mutable": False,
                                                        "type": {"generic": "Self"}}}]], {"primitive": "u32"})),
        item(50, "private", fn([], None), visibility="default"),
        item(7, None, impl({"path": "Clone", "id": 900, "args": None}, path("Thing", 2), []),
             visibility="default", attrs=["automatically_derived"]),
        item(8, None, impl({"path": "Send", "id": 901, "args": None}, path("Thing", 2), [], synthetic=True),
             visibility="default"),
        item(9, None, impl({"path": "From", "id": 902, "args": {"angle_bracketed": {"args": [
            {"type": {"generic": "T"}}], "constraints": []}}}, {"generic": "T"}, [], blanket={"generic": "T"},
            generics={"params": [{"name": "T", "kind": {"type": {"bounds": [], "default": None,
                                                                 "is_synthetic": False}}}],
                      "where_predicates": []}), visibility="default"),
        item(10, "Mode", {"enum": {"generics": no_generics, "has_stripped_variants": False,
                                   "variants": [11, 12], "impls": []}}, attrs=["non_exhaustive"]),
        item(11, "Fast", {"variant": {"kind": "plain", "discriminant": None}}, visibility="default"),
        item(12, "Slow", {"variant": {"kind": {"tuple": [13]}, "discriminant": None}}, visibility="default"),
        item(13, "0", {"struct_field": path("String", 903)}),
        item(15, "Speak", {"trait": {"is_auto": False, "is_unsafe": False, "is_dyn_compatible": True,
                                     "items": [16], "generics": no_generics, "bounds": [],
                                     "implementations": []}}),
        item(16, "speak", {"function": {"sig": {"inputs": [["self", {"borrowed_ref": {
            "lifetime": None, "is_mutable": False, "type": {"generic": "Self"}}}]],
            "output": path("String", 903), "is_c_variadic": False},
            "generics": no_generics, "header": header, "has_body": False}}, visibility="default"),
        item(20, "private", {"module": {"is_crate": False, "items": [21], "is_stripped": False}},
             visibility="default"),
        item(21, "helper", fn([["value", {"borrowed_ref": {"lifetime": None, "is_mutable": False,
                                                            "type": {"generic": "T"}}}]],
                              path("Option", 904, {"angle_bracketed": {"args": [{"type": {"generic": "T"}}],
                                                                       "constraints": []}}), t_param)),
        item(30, None, {"use": {"source": "outer::Thing", "name": "Alias", "id": 2, "is_glob": False}}),
        item(31, None, {"use": {"source": "private::helper", "name": "helper", "id": 21, "is_glob": False}}),
        item(40, "__private", {"module": {"is_crate": False, "items": [41, 42], "is_stripped": False}},
             attrs=[{"other": "#[doc(hidden)]"}]),
        item(41, None, {"use": {"source": "crate::outer::Mode", "name": "Mode", "id": 10, "is_glob": False}}),
        item(42, "DOOR", {"constant": {"type": {"primitive": "u8"}, "const": {"expr": "_", "value": "1u8",
                                                                           "is_literal": False}}}),
    ])
    paths = {
        "900": {"crate_id": 1, "path": ["core", "clone", "Clone"], "kind": "trait"},
        "901": {"crate_id": 1, "path": ["core", "marker", "Send"], "kind": "trait"},
        "902": {"crate_id": 1, "path": ["core", "convert", "From"], "kind": "trait"},
        "903": {"crate_id": 2, "path": ["alloc", "string", "String"], "kind": "struct"},
        "904": {"crate_id": 1, "path": ["core", "option", "Option"], "kind": "enum"},
    }
    return {"root": 0, "crate_version": None, "includes_private": False, "index": index,
            "paths": paths, "external_crates": {}, "target": {}, "format_version": 57}


EXPECTED_PUBLIC = [
    "demo::Alias re-export demo::outer::Thing",
    "demo::helper fn<T: Clone>(value: &T) -> Option<T>",
    "demo::outer mod",
    "demo::outer::Mode enum #[non_exhaustive]",
    "demo::outer::Mode::Fast variant",
    "demo::outer::Mode::Slow variant(String)",
    "demo::outer::Speak trait",
    "demo::outer::Speak::speak fn(&self) -> String",
    "demo::outer::Thing impl Clone",
    "demo::outer::Thing impl Send",
    "demo::outer::Thing struct { .. }",
    "demo::outer::Thing::new fn(size: u32) -> Self",
    "demo::outer::Thing::size field: u32",
    "demo::outer::Thing::size fn(&self) -> u32",
]
EXPECTED_HIDDEN = [
    "demo::__private mod",
    "demo::__private::DOOR const: u8",
    "demo::__private::Mode re-export demo::outer::Mode",
]


def self_test():
    public, hidden = list_api(sample())
    ok = public == EXPECTED_PUBLIC and hidden == EXPECTED_HIDDEN
    if not ok:
        print("public_api.py --self-test: FAILED", file=sys.stderr)
        print("public, got:\n  " + "\n  ".join(public), file=sys.stderr)
        print("hidden, got:\n  " + "\n  ".join(hidden), file=sys.stderr)
        return 1
    doc = sample()
    doc["format_version"] = 10_000
    try:
        Crate(doc)
    except ApiError:
        pass
    else:
        if not os.environ.get("PUBLIC_API_ANY_FORMAT"):
            print("public_api.py --self-test: FAILED: an unknown format_version was accepted", file=sys.stderr)
            return 1
    print(f"public_api.py --self-test: ok ({len(public)} public, {len(hidden)} hidden lines)")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json", nargs="?", help="rustdoc's JSON for the crate")
    parser.add_argument("-o", "--output", help="where to write the listing (default: stdout)")
    parser.add_argument("--min-public", type=int, default=0,
                        help="fail when fewer public lines are listed (a broken parse)")
    parser.add_argument("--min-hidden", type=int, default=0,
                        help="fail when fewer hidden lines are listed")
    parser.add_argument("--self-test", action="store_true", help="check the parser on a built-in sample")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not args.json:
        parser.error("the JSON file is required")
    try:
        with open(args.json, encoding="utf-8") as f:
            doc = json.load(f)
        public, hidden = list_api(doc)
    except (ApiError, KeyError, TypeError, AttributeError) as e:
        print(f"public_api.py: cannot read {args.json}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    text = render(public, hidden)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    if len(public) < args.min_public or len(hidden) < args.min_hidden:
        print(f"public_api.py: only {len(public)} public and {len(hidden)} hidden lines "
              f"(at least {args.min_public} and {args.min_hidden} expected): the parse is broken",
              file=sys.stderr)
        return 2
    print(f"public-api: {len(public)} public, {len(hidden)} hidden", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
