#!/usr/bin/env python3
"""Fails when the modules of a crate import each other in a cycle.

Usage: module_cycles.py CRATE_SRC... [-v]   (e.g. crates/*/src)

Files are nodes. An edge goes from a file to the file that defines what it
names: a `crate::…`, `self::…` or `super::…` path, or a `use` of a child
module, followed through re-exports (`pub use` in lib.rs, main.rs or any
mod.rs), so `use super::Calibration` leads to the file that defines
`Calibration`, not to the mod.rs that re-exports it. A re-export itself is
no edge (a facade depends on nothing). Test modules (`#[cfg(test)] mod
tests`, tests.rs) are left out. Prints the cycles (strongly connected
components of more than one file) per crate, and exits 1 when there is one.
"""
import os
import re
import sys


def strip(src):
    """`src` without comments, string and character literals, and its test module."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            i = src.find('\n', i)
            i = n if i < 0 else i
        elif src.startswith('/*', i):
            depth, i = 1, i + 2
            while i < n and depth:
                if src.startswith('/*', i):
                    depth, i = depth + 1, i + 2
                elif src.startswith('*/', i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif (m := re.match(r'b?r(#*)"', src[i:i + 260])) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == '_')):
            end = '"' + m.group(1)
            j = src.find(end, i + len(m.group(0)))
            i = n if j < 0 else j + len(end)
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and src[i] != '"':
                i += 2 if src[i] == '\\' else 1
            i += 1
            out.append('""')
        elif c == "'" and (m := re.match(r"'(?:\\.[^']*|[^\\'])'", src[i:i + 16])):
            i += len(m.group(0))  # a character literal ('a' is a lifetime: kept)
            out.append("' '")
        else:
            out.append(c)
            i += 1
    src = ''.join(out)
    m = re.search(r'#\[cfg\(test\)\]\n(?:pub(?:\(crate\))? )?mod tests', src)
    return src if m is None else src[:m.start()]


def expand(tree):
    """`a::{b::{C, D as E}, F}` → ['a::b::C', 'a::b::D', 'a::F'] (aliases dropped)."""
    tree = re.sub(r'\s+', '', re.sub(r'\s+as\s+\w+', '', tree))
    i = tree.find('{')
    if i < 0 or '}' not in tree:
        return [tree]
    head, body = tree[:i], tree[i + 1:tree.rindex('}')]
    parts, depth, cur = [], 0, ''
    for ch in body:
        if ch == ',' and depth == 0:
            parts.append(cur)
            cur = ''
            continue
        depth += ch == '{'
        depth -= ch == '}'
        cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        if not p:
            continue
        for e in expand(p):
            out.append(head[:-2] if e == 'self' else head + e)
    return out


class Crate:
    def __init__(self, root):
        self.files = {}
        for d, _, fs in os.walk(root):
            for f in fs:
                if not f.endswith('.rs'):
                    continue
                rel = os.path.relpath(os.path.join(d, f), root)
                if rel.endswith('tests.rs') or '/tests/' in rel:
                    continue
                with open(os.path.join(d, f)) as fh:
                    self.files[rel] = strip(fh.read())
        self.roots = [r for r in ('lib.rs', 'main.rs') if r in self.files]
        self.reexports = {f: self.uses(f, public=True) for f in self.files}

    def module(self, f):
        if f in ('lib.rs', 'main.rs'):
            return []
        return f[:-3].removesuffix('/mod').split('/')

    def file_of(self, path):
        if not path:
            return self.roots[0] if self.roots else None
        c = '/'.join(path)
        for cand in (c + '.rs', c + '/mod.rs'):
            if cand in self.files:
                return cand
        return None

    def uses(self, f, public):
        """The paths of `f`'s use statements: public ones (re-exports) or the others."""
        out = []
        for m in re.finditer(r'(pub(?:\([^)]*\))?\s+)?\buse\s+([^;]+);', self.files[f]):
            if bool(m.group(1)) == public:
                out.extend(expand(m.group(2)))
        return out

    def resolve(self, f, path, seen=()):
        """The file defining what `path` (as written in `f`) names, or None (another crate)."""
        segs = [s for s in path.split('::') if s]
        if not segs:
            return None
        mod = self.module(f)
        if segs[0] == 'crate':
            base, rest = [], segs[1:]
        elif segs[0] in ('self', 'super'):
            base, rest = mod, segs
            while rest and rest[0] in ('self', 'super'):
                base = base[:-1] if rest[0] == 'super' else base
                rest = rest[1:]
        elif self.file_of(mod + [segs[0]]) and self.file_of(mod + [segs[0]]) != f:
            base, rest = mod, segs
        else:
            return None
        m = base
        for i, s in enumerate(rest):
            if s == '*':
                break
            if self.file_of(m + [s]) and (m + [s]) != m:
                m = m + [s]
                continue
            here = self.file_of(m)
            for r in self.reexports.get(here, []):
                name = r.split('::')[-1]
                if (name == s or name == '*') and (here, r) not in seen:
                    t = self.resolve(here, r, seen + ((here, r),))
                    if t and (name == s or t != here):
                        return t
            return here
        return self.file_of(m)

    def edges(self):
        out = {}
        for f, src in self.files.items():
            deps = set()
            paths = self.uses(f, public=False)
            code = re.sub(r'(pub(?:\([^)]*\))?\s+)?\buse\s+[^;]+;', '', src)
            paths += [m.group(0) for m in re.finditer(r'\b(?:crate|super|self)(?:::\w+)+', code)]
            for p in paths:
                t = self.resolve(f, p)
                if t and t != f:
                    deps.add(t)
            out[f] = deps
        return out


def cycles(edges):
    idx, low, st, on, res, c = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def sc(v):
        idx[v] = low[v] = c[0]
        c[0] += 1
        st.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in idx:
                sc(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            comp = []
            while True:
                w = st.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                res.append(sorted(comp))
    for v in sorted(edges):
        if v not in idx:
            sc(v)
    return res


def main():
    roots = [a for a in sys.argv[1:] if not a.startswith('-')]
    bad = False
    for root in roots:
        e = Crate(root).edges()
        res = cycles(e)
        print(f"{root}: module cycles:", res if res else "none")
        bad |= bool(res)
        if '-v' in sys.argv:
            for f in sorted(e):
                print(' ', f, '->', sorted(e[f]))
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
