"""``python -m recjudge_utils.judge.profiles_cli`` (also ``recjudge profiles``): check judge profiles and write
their JSON Schema (``judges/profile.schema.json``, from :func:`recjudge_utils.judge.profile.profile_json_schema`)."""

from __future__ import annotations

import argparse
import json

from recjudge_utils.judge.loading import load_profile, profile_dir
from recjudge_utils.judge.profile import ProfileError, profile_json_schema

__all__ = ["SCHEMA_FILE", "main"]

SCHEMA_FILE = "profile.schema.json"
_DESCRIPTION = "Judge profiles: one YAML file per judge, naming everything a rerun with that judge needs."


def main(argv: list[str] | None = None, prog: str = "python -m recjudge_utils.judge.profiles_cli") -> int:
    """Check profiles and write their JSON Schema (also ``recjudge profiles``, :mod:`recjudge_utils.cli`)."""
    parser = argparse.ArgumentParser(prog=prog, description=_DESCRIPTION)
    parser.add_argument("--write-schema", action="store_true", help=f"write judges/{SCHEMA_FILE}")
    parser.add_argument(
        "--check", nargs="*", metavar="PROFILE", help="validate profiles (default: every judges/*.yaml)"
    )
    args = parser.parse_args(argv)
    folder = profile_dir()
    if args.write_schema:
        if folder is None:
            parser.error("needs a checkout with judges/")
        target = folder / SCHEMA_FILE
        target.write_text(json.dumps(profile_json_schema(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {target}")
    if args.check is not None:
        paths = args.check or sorted(str(p) for p in (folder.glob("*.yaml") if folder else []))
        for p in paths:
            try:
                profile = load_profile(p)
            except ProfileError as exc:
                print(f"error: {exc}")
                return 2
            print(f"ok: {p} ({profile.backend}, model {profile.model})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
