"""Checks that the running interpreter's environment is exactly the reference lock file.

    <venv>/bin/python tools/crosscheck/verify_env.py LOCK_FILE [--print]
    <venv>/bin/python tools/crosscheck/verify_env.py LOCK_FILE --extract-data WHEEL_DIR

Every `name==version` line of the lock must be installed at that version, nothing else that the
lock does not list may be installed (pip, setuptools and wheel, which venv itself installs, excepted), and the oracle modules
must import (those of them the lock pins), and each `# data:` file must be in <venv>/data with
its sha256. --extract-data takes those files out of their wheels (downloaded to WHEEL_DIR). Exit 0 when it holds, 2 with one line per problem otherwise. With --print, the
versions of the oracle packages are printed as a table.
"""
import hashlib
import importlib
import importlib.metadata as md
import os
import re
import shutil
import sys
import zipfile

# The oracle packages and the module each is imported as; those the lock pins must import.
ORACLES = {"torch": "torch", "transformers": "transformers", "ai2-olmo-core": "olmo_core",
           "safetensors": "safetensors", "tokenizers": "tokenizers", "tiktoken": "tiktoken",
           "numpy": "numpy"}
TOOLING = {"pip", "setuptools", "wheel"}  # what venv itself installs


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def read_data_lines(path):
    """The `# data: NAME==VERSION MEMBER SHA256` lines: [(pin, member, sha256)]."""
    out = []
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            if not raw.startswith("# data:"):
                continue
            parts = raw[len("# data:"):].split()
            if len(parts) != 3 or "==" not in parts[0] or not re.fullmatch(r"[0-9a-f]{64}", parts[2]):
                raise SystemExit(f"verify_env: {path}:{number}: expected "
                                 f"'# data: NAME==VERSION MEMBER SHA256': {raw.strip()}")
            out.append(tuple(parts))
    return out


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def extract_data(lock, wheel_dir):
    """Takes each data line's member out of its downloaded wheel into <environment>/data/."""
    os.makedirs(os.path.join(sys.prefix, "data"), exist_ok=True)
    for pin, member, digest in read_data_lines(lock):
        name, version = pin.split("==")
        wheels = [w for w in os.listdir(wheel_dir)
                  if canonical(w.split("-")[0]) == canonical(name) and w.split("-")[1] == version]
        if not wheels:
            raise SystemExit(f"verify_env: no wheel of {pin} in {wheel_dir}")
        target = os.path.join(sys.prefix, "data", os.path.basename(member))
        with zipfile.ZipFile(os.path.join(wheel_dir, wheels[0])) as z, \
                z.open(member) as src, open(target + ".tmp", "wb") as dst:
            shutil.copyfileobj(src, dst)
        if sha256_of(target + ".tmp") != digest:
            raise SystemExit(f"verify_env: {member} of {pin} has sha256 "
                             f"{sha256_of(target + '.tmp')}, the lock file says {digest}")
        os.replace(target + ".tmp", target)


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
    if "--extract-data" in sys.argv:
        extract_data(sys.argv[1], sys.argv[sys.argv.index("--extract-data") + 1])
        return
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
    for pin, member, digest in read_data_lines(sys.argv[1]):
        path = os.path.join(sys.prefix, "data", os.path.basename(member))
        if not os.path.isfile(path):
            problems.append(f"data file {path} ({member} of {pin}) is missing")
        elif sha256_of(path) != digest:
            problems.append(f"data file {path} does not have the lock file's sha256 {digest}")
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
