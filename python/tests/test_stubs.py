"""`_tessera.pyi` and the extension module agree: every function, class, method and
property the module exports is in the stub file, with the same parameters (names, order,
kind, which have defaults), and the stub names nothing the module lacks — as
datafusion-python's wrapper-coverage test keeps its wrappers and bindings in step."""

import ast
import inspect
import pathlib

from tessera import _tessera

# The checkout's stub (the one edited) where the tests run from a checkout, else the
# installed one.
STUB = pathlib.Path(__file__).resolve().parent.parent / "tessera" / "_tessera.pyi"
if not STUB.exists():
    STUB = pathlib.Path(_tessera.__file__).with_name("_tessera.pyi")


def stub_tree():
    """{name: FunctionDef} for the stub's functions and {class: {name: node}} for its
    classes (methods, properties and annotated attributes)."""
    tree = ast.parse(STUB.read_text())
    funcs, classes = {}, {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            funcs[node.name] = node
        elif isinstance(node, ast.ClassDef):
            members = {}
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    members[item.name] = item
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members[item.target.id] = item
            classes[node.name] = members
    return funcs, classes


def stub_params(node, method):
    """(name, kind, has a default) of each parameter of a stub `def`, `self` left out."""
    a = node.args
    out = []
    positional = a.posonlyargs + a.args
    first_default = len(positional) - len(a.defaults)
    for i, p in enumerate(positional):
        kind = "positional_only" if i < len(a.posonlyargs) else "positional_or_keyword"
        out.append((p.arg, kind, i >= first_default))
    if a.vararg:
        out.append((a.vararg.arg, "var_positional", False))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((p.arg, "keyword_only", d is not None))
    if a.kwarg:
        out.append((a.kwarg.arg, "var_keyword", False))
    if method and out and out[0][0] in ("self", "cls"):
        out = out[1:]
    return out


def module_params(obj):
    """The same for a compiled function or method, from its text signature; None where
    it has none (slot wrappers such as `__add__`)."""
    try:
        sig = inspect.signature(obj)
    except (ValueError, TypeError):
        return None
    out = []
    for p in sig.parameters.values():
        if p.name in ("self", "$self", "cls", "$cls", "$type"):
            continue
        out.append((p.name, p.kind.name.lower(), p.default is not inspect.Parameter.empty))
    return out


def same_shape(ours, stub):
    # A positional-or-keyword stub parameter stands for the module's either kind.
    norm = lambda ps: [(n, "positional_or_keyword" if k == "positional_only" else k, d) for n, k, d in ps]
    return norm(ours) == norm(stub)


def exported():
    """The module's public functions and classes, and the accessor classes an `Expr`
    hands out (`.str`, `.dt`), which the module does not export by name."""
    out = {}
    for name in dir(_tessera):
        if name.startswith("__"):
            continue
        out[name] = getattr(_tessera, name)
    probe = _tessera.col("x")
    for accessor in ("str", "dt"):
        cls = type(getattr(probe, accessor))
        out[cls.__name__] = cls
    return out


def has_member(cls, name):
    # `__getattr__` from Rust is the type's attribute lookup slot: it shows as the class's
    # own `__getattribute__`.
    if name == "__getattr__":
        return "__getattribute__" in vars(cls)
    return hasattr(cls, name)


def test_every_function_is_stubbed_with_its_signature():
    funcs, classes = stub_tree()
    problems = []
    for name, obj in exported().items():
        if isinstance(obj, type):
            if name not in classes and not issubclass(obj, BaseException):
                problems.append(f"class {name} is not in the stub")
            continue
        if not callable(obj):
            continue
        if name not in funcs:
            problems.append(f"function {name} is not in the stub")
            continue
        ours = module_params(obj)
        stub = stub_params(funcs[name], method=False)
        if ours is not None and not same_shape(ours, stub):
            problems.append(f"{name}: the module takes {ours}, the stub says {stub}")
    assert not problems, "\n".join(problems)


def test_every_method_and_property_is_stubbed_with_its_signature():
    _, classes = stub_tree()
    problems = []
    for cname, cls in exported().items():
        if not isinstance(cls, type) or cname not in classes:
            continue
        stubbed = classes[cname]
        for name, member in vars(cls).items():
            if name.startswith("__") and name not in stubbed:
                continue  # slots the interpreter adds (`__doc__`, `__module__`, ...)
            if name.startswith("_") and not name.startswith("__") and name not in stubbed:
                problems.append(f"{cname}.{name} is not in the stub")
                continue
            if name not in stubbed:
                problems.append(f"{cname}.{name} is not in the stub")
                continue
            node = stubbed[name]
            if inspect.isdatadescriptor(member) and not callable(member):
                is_property = isinstance(node, ast.AnnAssign) or any(
                    isinstance(d, ast.Name) and d.id == "property" for d in getattr(node, "decorator_list", [])
                )
                if not is_property:
                    problems.append(f"{cname}.{name} is a property; the stub makes it a method")
                continue
            if isinstance(node, ast.FunctionDef) and not (name.startswith("__") and name.endswith("__")):
                # (An operator's parameters are the interpreter's slot signature.)
                ours = module_params(member)
                stub = stub_params(node, method=True)
                if ours is not None and not same_shape(ours, stub):
                    problems.append(f"{cname}.{name}: the module takes {ours}, the stub says {stub}")
    assert not problems, "\n".join(problems)


def test_the_stub_names_nothing_the_module_lacks():
    funcs, classes = stub_tree()
    module = exported()
    missing = [f for f in funcs if f not in module]
    for cname, members in classes.items():
        if cname not in module:
            missing.append(cname)
            continue
        cls = module[cname]
        missing += [f"{cname}.{m}" for m in members if not has_member(cls, m)]
    assert not missing, f"in the stub, not in the module: {missing}"


def test_the_check_catches_a_planted_mismatch():
    funcs, _ = stub_tree()
    stub = stub_params(funcs["concatenate"], method=False)
    ours = module_params(_tessera.concatenate)
    assert ours is not None and same_shape(ours, stub)
    assert not same_shape(ours[:-1], stub), "a dropped parameter"
    assert not same_shape([(n, k, True) for n, k, _ in ours], stub), "a default added"
    assert not same_shape([(n + "s", k, d) for n, k, d in ours], stub), "a renamed parameter"
