#!/usr/bin/env python3
"""Build a git repository from the real release history of a PyPI project (for benches/mine.rs).

Each release's pure-Python wheel (downloaded with pip) becomes one commit, in version order,
whose message is that release's section of the project's changelog (taken from the newest
sdist), dated with the changelog's release date. The result is cached: rerunning with the same
arguments reuses the finished repository.

    python3 benches/make_history_repo.py --package requests --out target/bench-mine/requests-history
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

HEADER = re.compile(r"^(?:#+\s*)?(?:version\s+|v)?(\d+\.\d+(?:\.\d+)*)\b[^\n]*$", re.IGNORECASE)
DATE = re.compile(r"(\d{4}-\d{2}-\d{2})")


def pip(*args, check=True):
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, check=check)


def version_key(v):
    try:
        from packaging.version import Version

        return Version(v)
    except Exception:
        return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.\-]", v))


def list_versions(package):
    out = pip("index", "versions", package, "--pre").stdout
    m = re.search(r"Available versions:\s*(.*)", out)
    if not m:
        raise SystemExit(f"cannot list versions of {package}:\n{out}")
    versions = [v.strip() for v in m.group(1).split(",") if v.strip()]
    finals = [v for v in versions if re.fullmatch(r"\d+(\.\d+)*", v)]
    return sorted(finals, key=version_key)


def download_wheel(package, version, dest):
    existing = list(dest.glob(f"{package.replace('-', '_')}-{version}-*.whl"))
    if existing:
        return version, existing[0]
    res = pip("download", "--no-deps", "--only-binary", ":all:", f"{package}=={version}", "-d", str(dest), check=False)
    if res.returncode != 0:
        return version, None
    found = list(dest.glob(f"*-{version}-*.whl"))
    pure = [w for w in found if w.name.endswith("-none-any.whl")]
    return version, (pure or found or [None])[0]


def changelog_sections(package, latest, cache):
    """Map version -> (date or None, text) from the changelog in the newest sdist."""
    sdist_dir = cache / "sdist"
    sdist_dir.mkdir(parents=True, exist_ok=True)
    if not any(sdist_dir.glob("*.tar.gz")):
        pip("download", "--no-deps", "--no-binary", ":all:", f"{package}=={latest}", "-d", str(sdist_dir), check=False)
    sections = {}
    for sdist in sdist_dir.glob("*.tar.gz"):
        with tarfile.open(sdist) as tar:
            for member in tar.getmembers():
                parts = member.name.split("/")
                if len(parts) == 2 and re.match(r"(HISTORY|CHANGES|CHANGELOG|NEWS)", parts[1], re.IGNORECASE):
                    text = tar.extractfile(member).read().decode("utf-8", "replace")
                    sections.update(parse_changelog(text))
    return sections


def parse_changelog(text):
    sections, current, body = {}, None, []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = HEADER.match(line.strip())
        underlined = i + 1 < len(lines) and re.fullmatch(r"[-=~^]{3,}", lines[i + 1].strip() or "x")
        if m and (underlined or line.lstrip().startswith("#")):
            if current:
                sections.setdefault(current[0], (current[1], "\n".join(body).strip()))
            d = DATE.search(line)
            current, body = (m.group(1), d.group(1) if d else None), []
        elif current and not re.fullmatch(r"[-=~^]{3,}", line.strip() or "x"):
            body.append(line)
    if current:
        sections.setdefault(current[0], (current[1], "\n".join(body).strip()))
    return sections


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", default="requests")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--max-versions", type=int, default=0, help="keep only the newest N releases (0 = all)")
    args = ap.parse_args()
    repo = args.out
    done = repo / ".git" / "deepdebug-bench-complete"
    if done.exists():
        print(repo)
        return
    cache = repo.parent / f"{args.package}-downloads"
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    versions = list_versions(args.package)
    if args.max_versions:
        versions = versions[-args.max_versions :]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        got = dict(pool.map(lambda v: download_wheel(args.package, v, wheels), versions))
    releases = [(v, got[v]) for v in versions if got.get(v)]
    if not releases:
        raise SystemExit(f"no wheels downloaded for {args.package}")
    sections = changelog_sections(args.package, versions[-1], cache)

    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    last_date = "2010-01-01"
    for n, (version, wheel) in enumerate(releases):
        for child in repo.iterdir():
            if child.name != ".git":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        with zipfile.ZipFile(wheel) as zf:
            for info in zf.infolist():
                top = info.filename.split("/")[0]
                if top.endswith(".dist-info") or info.is_dir():
                    continue
                zf.extract(info, repo)
        date, text = sections.get(version, (None, ""))
        last_date = date or last_date
        message = f"Release {version}\n\n{text}\n" if text else f"Release {version}\n"
        env = dict(os.environ)
        stamp = f"{last_date}T12:00:{n % 60:02d}+00:00"
        env.update(
            GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.com", GIT_AUTHOR_DATE=stamp,
            GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.com", GIT_COMMITTER_DATE=stamp,
        )
        git(repo, "add", "-A")
        subprocess.run(
            ["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-F", "-"],
            input=message, text=True, check=True, capture_output=True, env=env,
        )
    # Pack the objects like a clone would have them (commits made one by one stay loose).
    git(repo, "gc", "--quiet", "--aggressive", "--prune=now")
    done.write_text(f"{args.package} {len(releases)} releases\n")
    print(repo)


if __name__ == "__main__":
    main()
