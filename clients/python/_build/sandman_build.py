"""A PEP 517 build backend on the standard library alone.

Why not setuptools: a wheel from setuptools needs the ``wheel`` package
(bdist_wheel), which this package's build machines may lack, and PyPI may be
out of reach, so ``pip wheel --no-build-isolation`` would fail there. A pure
Python package needs little: a wheel is a zip of the package, METADATA,
WHEEL and RECORD (PEP 427, core metadata 2.1), an sdist a tar.gz with
PKG-INFO. This backend writes both from pyproject.toml (read with tomllib)
and sandman/_version.py, with fixed timestamps, so two builds of one tree
give the same bytes. Hooks: build_wheel, build_sdist,
prepare_metadata_for_build_wheel and the get_requires_* hooks (nothing).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import re
import tarfile
import tomllib
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "sandman"
EPOCH = (1980, 1, 1, 0, 0, 0)


def _project() -> dict:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _version() -> str:
    with open(os.path.join(ROOT, PACKAGE, "_version.py"), encoding="utf-8") as f:
        m = re.search(r'^API_VERSION = "([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("sandman/_version.py has no API_VERSION")
    return m.group(1)


def _metadata() -> str:
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {_version()}",
        f"Summary: {p['description']}",
        f"License: {p.get('license', {}).get('text', '')}",
        f"Requires-Python: {p['requires-python']}",
        *[f"Requires-Dist: {d}" for d in p.get("dependencies", [])],
        *[f"Classifier: {c}" for c in p.get("classifiers", [])],
        "Description-Content-Type: text/markdown",
    ]
    with open(os.path.join(ROOT, p["readme"]), encoding="utf-8") as f:
        return "\n".join(lines) + "\n\n" + f.read()


def _package_files() -> list[str]:
    out = []
    for d, dirs, files in os.walk(os.path.join(ROOT, PACKAGE)):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        out += [os.path.relpath(os.path.join(d, f), ROOT) for f in sorted(files) if f.endswith((".py", "py.typed"))]
    return out


def _dist_info() -> str:
    return f"{PACKAGE}-{_version()}.dist-info"


def _wheel_text() -> str:
    return "Wheel-Version: 1.0\nGenerator: sandman_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def get_requires_for_build_wheel(config_settings=None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings=None) -> list[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None) -> str:
    d = os.path.join(metadata_directory, _dist_info())
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(d, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(_wheel_text())
    return _dist_info()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    name = f"{PACKAGE}-{_version()}-py3-none-any.whl"
    entries: list[tuple[str, bytes]] = []
    for rel in _package_files():
        with open(os.path.join(ROOT, rel), "rb") as f:
            entries.append((rel.replace(os.sep, "/"), f.read()))
    info = _dist_info()
    entries.append((f"{info}/METADATA", _metadata().encode()))
    entries.append((f"{info}/WHEEL", _wheel_text().encode()))
    record = []
    for path, data in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    entries.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    os.makedirs(wheel_directory, exist_ok=True)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in entries:
            zi = zipfile.ZipInfo(path, EPOCH)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return name


def build_sdist(sdist_directory, config_settings=None) -> str:
    base = f"{PACKAGE}-{_version()}"
    files = ["pyproject.toml", "README.md", "_build/sandman_build.py", *_package_files()]
    os.makedirs(sdist_directory, exist_ok=True)
    name = f"{base}.tar.gz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def add(path: str, data: bytes) -> None:
            ti = tarfile.TarInfo(f"{base}/{path}")
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 315532800
            tar.addfile(ti, io.BytesIO(data))

        add("PKG-INFO", _metadata().encode())
        for rel in files:
            with open(os.path.join(ROOT, rel), "rb") as f:
                add(rel.replace(os.sep, "/"), f.read())
    with open(os.path.join(sdist_directory, name), "wb") as f:
        f.write(gzip.compress(buf.getvalue(), mtime=0))
    return name
