"""Independent checks of feedbench's plan files with tools nobody on the project wrote.

    python3 tests/python/plan_tools.py validate SCHEMA PLAN...   # JSON Schema (jsonschema)
    python3 tests/python/plan_tools.py hash PLAN...              # plan hash per docs/plan.md

YAML is read with ruamel.yaml under the YAML 1.2 core schema; timestamps stay strings.
"""
import hashlib
import json
import sys

import jcs
import jsonschema
from ruamel.yaml import YAML
from ruamel.yaml.constructor import SafeConstructor


class CoreConstructor(SafeConstructor):
    """YAML 1.2 core schema: no timestamps, so dates stay strings."""


CoreConstructor.add_constructor(
    "tag:yaml.org,2002:timestamp", SafeConstructor.construct_yaml_str
)


def load(path):
    yaml = YAML(typ="safe", pure=True)
    yaml.version = (1, 2)
    yaml.Constructor = CoreConstructor
    with open(path, encoding="utf-8") as f:
        return yaml.load(f)


def validate(schema_path, plans):
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    validator = jsonschema.Draft7Validator(schema)
    failed = 0
    for plan in plans:
        errors = sorted(validator.iter_errors(load(plan)), key=lambda e: list(e.path))
        for e in errors:
            print(f"{plan}: {'.'.join(map(str, e.path))}: {e.message}")
        failed += bool(errors)
        if not errors:
            print(f"{plan}: valid")
    return failed


def plan_hash(plans):
    for plan in plans:
        print(f"{hashlib.sha256(jcs.canonicalize(load(plan))).hexdigest()}  {plan}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "validate":
        sys.exit(1 if validate(sys.argv[2], sys.argv[3:]) else 0)
    if len(sys.argv) >= 3 and sys.argv[1] == "hash":
        sys.exit(plan_hash(sys.argv[2:]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
