"""Checks that the running interpreter's environment is exactly the reference lock file.

    <venv>/bin/python tools/crosscheck/verify_env.py LOCK_FILE [--print]

Every `name==version` line of the lock must be installed at that version, nothing else that the
lock does not list may be installed (pip, setuptools and wheel, which venv itself installs, excepted), and the oracle modules
must import (those of them the lock pins). Exit 0 when it holds, 2 with one line per problem otherwise. With --print, the
versions of the oracle packages are printed as a table.
"""
import importlib
import importlib.metadata as md
import re
import sys

# The oracle packages and the module each is imported as; those the lock pins must import.
ORACLES = {"torch": "torch", "transformers": "transformers", "ai2-olmo-core": "olmo_core",
           "safetensors": "safetensors", "tokenizers": "tokenizers", "tiktoken": "tiktoken",
           "numpy": "numpy"}
TOOLING = {"pip", "setuptools", "wheel"}  # what venv itself installs


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path):
    pins = {}
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)", line)
            if not m:
                raise SystemExit(f"verify_env: {path}:{number}: not a 'name==version' pin: {line}")
            pins[canonical(m.group(1))] = m.group(2)
    return pins


def main():
    if len(sys.argv) < 2:
        raise SystemExit("usage: verify_env.py LOCK_FILE [--print]")
    pins = read_lock(sys.argv[1])
    installed = {canonical(d.metadata["Name"]): d.version for d in md.distributions()}
    problems = []
    for name, version in sorted(pins.items()):
        have = installed.get(name)
        if have is None:
            problems.append(f"{name}=={version} is in the lock file but not installed")
        elif have != version:
            problems.append(f"{name} is {have}, the lock file says {version}")
    for name in sorted(set(installed) - set(pins) - TOOLING):
        problems.append(f"{name}=={installed[name]} is installed but not in the lock file")
    for module in [m for p, m in ORACLES.items() if p in pins]:
        try:
            importlib.import_module(module)
        except Exception as e:  # any import failure makes the environment unusable
            problems.append(f"import {module} fails: {type(e).__name__}: {e}")
    if problems:
        for p in problems:
            print(f"reference environment: {p}", file=sys.stderr)
        sys.exit(2)
    if "--print" in sys.argv:
        print(f"  python {sys.version.split()[0]}")
        for name in [p for p in ORACLES if p in pins]:
            print(f"  {name} {installed[name]}")


if __name__ == "__main__":
    main()
