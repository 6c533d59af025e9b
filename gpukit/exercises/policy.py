"""What a submitted file may contain, read from its syntax tree before anything runs.

A submission is a kernel and the constants and helpers it needs. The checker reads the file
with :mod:`ast` (which runs nothing) and refuses, with the line and the reason:

* imports of anything but ``numba`` (and ``numba.cuda``), ``math`` and ``numpy``;
* names and attributes that start with an underscore (private parts of arrays, modules and
  frames), and the built-ins that reach other objects or run code (``getattr``, ``exec``,
  ``open``, ``globals``...);
* assignments to attributes, ``global`` and ``nonlocal`` (state kept outside a kernel),
  classes;
* in a function that is not a kernel (it runs on the host): any module but ``math``;
* at the top level, anything but the docstring, imports, constants, functions and an
  ``if __name__ == "__main__":`` block (which is dropped: the checker never runs it).
"""

from __future__ import annotations

import ast

#: modules a submission may import
MODULES = {"numba", "numba.cuda", "math", "numpy"}
#: built-in names a submission may not use
BUILTINS = {"exec", "eval", "compile", "open", "globals", "locals", "vars", "getattr", "setattr",
            "delattr", "hasattr", "breakpoint", "input", "exit", "quit", "memoryview", "type",
            "object", "super", "dir", "help", "id", "classmethod", "staticmethod", "property"}
#: the modules an attribute of an allowed module may lead to
SUBMODULES = {"numba": {"cuda": "numba.cuda", "types": "numba.types"}, "numba.cuda": {},
              "numba.types": {}, "math": {}, "numpy": {}}
#: attributes of the allowed modules that lead out of them (their own submodules and the
#: modules they import) or read and write files
LEAVING = set("""
    api api_util args bf16 cache_hints cext cg cgutils cloudpickle codegen compiler config
    contextlib core cpython cuda_paths cudadrv datamodel debuginfo decorators descriptor
    device_init devicearray devices deviceufunc dispatcher driver errors extending flags
    importlib initialize intrinsics itanium_mangler kernel kernelapi kernels launchconfig
    libdevice literal locks lowering mathimpl memory_management misc models np nvvm nvvmutils
    os reduction serialize simulator simulator_init stubs sys target typeconv typing ufuncs
    utils vectorizers warnings experimental llvmlite numba parfors platform re stencils typed
    dtypes emath exceptions lib linalg matrixlib polynomial random version testing ctypeslib
    abstract collections common containers ctypes enum function_type functions ir iterators
    itertools logging npytypes scalars struct textwrap traceback types weakref
    load save savez savez_compressed fromfile memmap loadtxt savetxt genfromtxt fromregex
    DataSource show_config info source tofile dump dumps
""".split())
#: attribute names that reach frames, code and globals
INTROSPECTION = {"gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await",
                 "ag_frame", "ag_code", "f_back", "f_globals", "f_locals", "f_builtins",
                 "f_code", "tb_frame", "tb_next", "func_globals", "func_code", "mro"}
#: what a top-level constant may be built from
CONSTANT_NODES = (ast.Constant, ast.Name, ast.Attribute, ast.BinOp, ast.UnaryOp, ast.Tuple,
                  ast.BoolOp, ast.Compare, ast.IfExp, ast.Load, ast.operator, ast.unaryop,
                  ast.boolop, ast.cmpop)


class Refused(Exception):
    """The file breaks a rule of what a submission may contain."""


def is_main_block(node) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


def without_main(tree: ast.Module) -> ast.Module:
    tree.body = [n for n in tree.body if not is_main_block(n)]
    return tree


def _refuse(node, why: str):
    raise Refused(f"line {getattr(node, 'lineno', '?')}: {why}")


def _check_import(node) -> None:
    names = ([a.name for a in node.names] if isinstance(node, ast.Import)
             else [node.module or ""])
    for name in names:
        if name not in MODULES or (isinstance(node, ast.ImportFrom) and node.level):
            _refuse(node, f"`{name or '.'}` cannot be imported in a submission (numba, "
                          "numba.cuda, math and numpy can)")
    if isinstance(node, ast.ImportFrom):
        for a in node.names:
            if a.name == "*" or a.name.startswith("_"):
                _refuse(node, f"`from {node.module} import {a.name}` is not allowed")


def _modules(tree) -> dict:
    """Names bound to an allowed module anywhere in the file -> that module."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    names[a.asname] = a.name
                else:
                    names[a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module in SUBMODULES:
            for a in node.names:
                if a.name in SUBMODULES[node.module]:
                    names[a.asname or a.name] = SUBMODULES[node.module][a.name]
                elif a.name in LEAVING:
                    _refuse(node, f"`from {node.module} import {a.name}` leads out of the "
                                  "modules a kernel needs")
    return names


def _check_modules(tree) -> None:
    """A module is used only as ``module.name``, and never to reach another module."""
    modules = _modules(tree)
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and node.id in modules):
            continue
        where, sub = node, modules[node.id]
        while sub is not None:
            up = parents.get(where)
            if not (isinstance(up, ast.Attribute) and up.value is where):
                if isinstance(up, (ast.Import, ast.ImportFrom)) or isinstance(
                        getattr(node, "ctx", None), ast.Store):
                    break
                _refuse(node, f"the module `{ast.unparse(where)}` may only be used as "
                              f"`{ast.unparse(where)}.name`")
            if up.attr in SUBMODULES.get(sub, {}):
                sub = SUBMODULES[sub][up.attr]
            elif up.attr in LEAVING:
                _refuse(up, f"`{ast.unparse(up)}` leads out of the modules a kernel needs")
            else:
                sub = None
            where = up


def _check_host_functions(tree) -> None:
    """A function that is not a kernel runs on the host, in the checker's child: it may use
    ``math`` and plain Python, nothing that could compute the answer with NumPy."""
    modules = _modules(tree)
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or any(
                "jit" in ast.unparse(d) for d in node.decorator_list):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and modules.get(sub.id, "math") != "math":
                _refuse(sub, f"`{node.name}` runs on the host: it may use `math` but not "
                             f"`{sub.id}`")
            if isinstance(sub, (ast.Import, ast.ImportFrom)):
                _refuse(sub, f"`{node.name}` runs on the host: it may not import")


def _check_node(node) -> None:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        _check_import(node)
    elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
        _refuse(node, f"`.{node.attr}` reaches a private part of an object: a kernel sees "
                      "arrays only through indexing")
    elif isinstance(node, ast.Attribute) and node.attr in INTROSPECTION:
        _refuse(node, f"`.{node.attr}` reaches the running program's frames or code")
    elif isinstance(node, ast.Name) and (node.id.startswith("__") or node.id in BUILTINS):
        _refuse(node, f"`{node.id}` is not allowed in a submission")
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        _refuse(node, "`global` and `nonlocal` keep state outside the kernel: a GPU kernel "
                      "keeps it in arrays, shared or local memory")
    elif isinstance(node, ast.ClassDef):
        _refuse(node, "classes are not allowed in a submission")
    elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        while targets:
            t = targets.pop()
            if isinstance(t, (ast.Tuple, ast.List)):
                targets.extend(t.elts)
            elif isinstance(t, (ast.Starred, ast.Subscript)):
                targets.append(t.value)
            elif isinstance(t, ast.Attribute):
                _refuse(node, "assigning to an attribute is not allowed in a submission")


def _check_top(node) -> None:
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef)):
        return
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = node.value
        if all(isinstance(t, ast.Name) for t in targets) and value is not None and all(
                isinstance(n, CONSTANT_NODES) for n in ast.walk(value)):
            return
        _refuse(node, "a top-level assignment may only name a constant (a number, or "
                      "arithmetic on constants): arrays and calls belong inside functions")
    _refuse(node, f"a `{type(node).__name__}` statement is not allowed at the top level (only "
                  "imports, constants and functions)")


def check(tree: ast.Module, kernel: str) -> str | None:
    """None when ``tree`` may be run as a submission whose kernel is ``kernel``; else why not.
    :class:`LookupError` when it defines no such kernel."""
    body = [n for n in tree.body if not is_main_block(n)]
    found = [n for n in body if isinstance(n, ast.FunctionDef) and n.name == kernel]
    if not found:
        raise LookupError(f"defines no `{kernel}`")
    if not any("jit" in ast.unparse(d) for d in found[-1].decorator_list):
        raise LookupError(f"`{kernel}` is not a @cuda.jit kernel (a host function "
                          "cannot be checked: the puzzle is to write the kernel)")
    try:
        for node in body:
            for sub in ast.walk(node):
                _check_node(sub)
            _check_top(node)
        _check_modules(ast.Module(body=body, type_ignores=[]))
        _check_host_functions(ast.Module(body=body, type_ignores=[]))
    except Refused as exc:
        return str(exc)
    return None
