#!/usr/bin/env python3
"""Fails when the modules of a crate import each other in a cycle.

Usage: module_cycles.py crates/sort/src [-v]. Files are nodes; an edge is a
`crate::…` or `super::…` path naming another file's module (re-exports of
lib.rs resolved). Test modules are left out. Prints the cycles (strongly
connected components of more than one file) and exits 1 when there is one.
"""
import re,os,sys
root=sys.argv[1]
files={}
for d,_,fs in os.walk(root):
    for f in fs:
        if f.endswith('.rs'):
            p=os.path.join(d,f); rel=os.path.relpath(p,root)
            if rel.endswith('tests.rs') or '/tests/' in rel: continue
            files[rel]=open(p).read()
def modfile(parts):
    # parts like ['pdisk','order']
    for n in range(len(parts),0,-1):
        c='/'.join(parts[:n])
        for cand in (c+'.rs', c+'/mod.rs'):
            if cand in files: return cand
    return None
lib=files['lib.rs']
reexp={}
for m in re.finditer(r'pub use (\w+)::(\{[^}]*\}|\w+);',lib):
    mod=m.group(1); names=m.group(2).strip('{}').split(',')
    for n in names:
        n=n.strip()
        if n: reexp[n]=mod
edges={}
for f,src in files.items():
    # strip cfg(test) modules roughly
    src=src.split('#[cfg(test)]\nmod tests {')[0]
    src=re.sub(r'//.*','',src)
    deps=set()
    base=f[:-3].replace('/mod','').split('/')
    for m in re.finditer(r'crate::((?:\w+::)*)(\{[^}]*\}|\w+)',src):
        path=[x for x in m.group(1).split('::') if x]
        items=m.group(2).strip('{}')
        if not path:
            for it in re.split(r'[,\s]+',items):
                it=it.split('::')[0]
                if it in reexp: t=modfile([reexp[it]])
                else: t=modfile([it])
                if t: deps.add(t)
        else:
            for it in re.split(r'[,\s]+',items):
                it=it.split('::')[0]
                if not it: continue
                t=modfile(path+[it]) if (('/'.join(path+[it])+'.rs') in files or ('/'.join(path+[it])+'/mod.rs') in files) else modfile(path)
                if t: deps.add(t)
    for m in re.finditer(r'\bsuper::((?:\w+::)*)(\w+)',src):
        parent=base[:-1]
        path=parent+[x for x in m.group(1).split('::') if x]
        t=modfile(path+[m.group(2)]) or modfile(path)
        if t: deps.add(t)
    deps.discard(f)
    edges[f]=deps
# find SCCs
idx={};low={};st=[];on=set();res=[];c=[0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
    for w in edges.get(v,()):
        if w not in idx: sc(w);low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],idx[w])
    if low[v]==idx[v]:
        comp=[]
        while True:
            w=st.pop();on.discard(w);comp.append(w)
            if w==v:break
        if len(comp)>1: res.append(comp)
for v in edges:
    if v not in idx: sc(v)
print("module cycles:", res if res else "none")
if res:
    sys.exit(1)
if '-v' in sys.argv:
    for f in sorted(edges): print(f,'->',sorted(edges[f]))
