"""The config classes of the installed OLMo-core reachable from the official scripts' top-level
config class (olmo_core.script_utils.ExperimentConfig), read from their dataclass definitions.

    classes() -> {"root": NAME, "olmo_core": VERSION, "classes": {NAME: {"type": REGISTERED_NAME,
                  "fields": {FIELD: {"default": ..., "annotation": ..., "refs": [NAME, ...]}}}}}

A class is reachable when a field's annotation names it or a base class of it (every subclass
defined anywhere in the olmo_core package counts, so all its modules are imported first). Fields
are those Config.as_config_dict writes: init fields whose names do not start with "_".

walk(snapshot, table) applies the importer's field table (`replica import-config --field-table`):
starting at the root, it follows only fields the table maps (an accepted or refused field, or a
class accepted or refused whole, is not read further by the importer), and returns the rows of
what it found: classes and fields the table does not know, and registered names that differ.
The C++ test tests/run/olmo_core_fields_test.cc does the same walk over the committed snapshot.
"""
import dataclasses
import enum
import importlib
import pkgutil
import typing

ROOT = "olmo_core.script_utils.ExperimentConfig"


def _import_all():
    import olmo_core
    for m in pkgutil.walk_packages(olmo_core.__path__, "olmo_core."):
        try:
            importlib.import_module(m.name)
        except BaseException:  # modules needing packages the reference env lacks (beaker, pytest)
            pass


def _subclasses(c):
    out = [c]
    for s in c.__subclasses__():
        out += _subclasses(s)
    return out


def _classes_in(t):
    if typing.get_origin(t) is None:
        return [t] if isinstance(t, type) else []
    return [c for a in typing.get_args(t) for c in _classes_in(a)]


def _name(c):
    return f"{c.__module__}.{c.__qualname__}"


def _json_default(f):
    if f.default is not dataclasses.MISSING:
        d = f.default
    elif f.default_factory is not dataclasses.MISSING:
        try:
            d = f.default_factory()
        except Exception:
            return {"factory": getattr(f.default_factory, "__name__", "?")}
    else:
        return {"required": True}
    if isinstance(d, enum.Enum):
        d = d.value
    if dataclasses.is_dataclass(d):
        return {"instance": _name(type(d))}
    if isinstance(d, tuple):
        d = list(d)
    try:
        import json
        json.dumps(d)
        return {"value": d}
    except TypeError:
        return {"repr": repr(d)}


def classes():
    _import_all()
    import olmo_core
    from olmo_core.config import Registrable
    from olmo_core.script_utils import ExperimentConfig
    out = {}
    todo = [ExperimentConfig]
    while todo:
        c = todo.pop()
        name = _name(c)
        if name in out or not dataclasses.is_dataclass(c) or not c.__module__.startswith("olmo_core"):
            continue
        hints = typing.get_type_hints(c)
        reg = ""
        if issubclass(c, Registrable):
            try:
                reg = c.get_registered_name()
            except Exception:
                reg = ""
        fields = {}
        for f in dataclasses.fields(c):
            if not f.init or f.name.startswith("_"):
                continue
            t = hints.get(f.name, f.type)
            refs = []
            for k in _classes_in(t):
                for s in _subclasses(k):
                    if dataclasses.is_dataclass(s) and s.__module__.startswith("olmo_core"):
                        refs.append(_name(s))
                        todo.append(s)
            fields[f.name] = {"annotation": str(t).replace("typing.", ""),
                              "default": _json_default(f), "refs": sorted(set(refs))}
        out[name] = {"type": reg or "", "fields": fields}
    return {"root": ROOT, "olmo_core": olmo_core.__version__ if hasattr(olmo_core, "__version__")
            else importlib.metadata.version("ai2-olmo-core"),
            "classes": dict(sorted(out.items()))}


def walk(snapshot, table):
    """Rows (case, what, ok) for every class the importer can reach and every field of those it
    reads field by field."""
    rows = []
    known = table["classes"]
    seen = set()
    todo = [snapshot["root"]]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        cls = snapshot["classes"][name]
        rule = known.get(name)
        if rule is None:
            rows.append((name, "class not in the importer's table (refused as unknown)", False))
            continue
        if rule["type"] != cls["type"]:
            rows.append((name, f"registered name: table {rule['type']!r}, installed "
                               f"{cls['type']!r}", False))
        if rule["whole"] != "fields" and not rule["whole"].startswith("refused ("):
            rows.append((name, f"{rule['whole']} whole: {rule['reason']}", True))
            continue
        for field, info in cls["fields"].items():
            r = rule["fields"].get(field)
            if r is None:
                rows.append((f"{name}.{field}", "field not in the importer's table", False))
                continue
            if r["use"] == "mapped":
                todo.extend(info["refs"])
        missing = sorted(set(rule["fields"]) - set(cls["fields"]))
        if missing:
            rows.append((name, "table fields the installed class lacks (older versions): " +
                         ", ".join(missing), True))
    return rows, seen


def counts(table, reached):
    """Per class reached: mapped / accepted (any value) / accepted at values / refused."""
    out = {}
    for name in sorted(reached):
        rule = table["classes"].get(name)
        if rule is None:
            continue
        if rule["fields"] and not (rule["whole"] in ("accepted", "refused")):
            c = {"mapped": 0, "accepted": 0, "accepted_at": 0, "refused": 0}
            for f in rule["fields"].values():
                key = "accepted_at" if f["use"] == "accepted" and "at" in f else f["use"]
                c[key] += 1
            out[name] = c
        else:
            out[name] = {"whole": rule["whole"]}
    return out
