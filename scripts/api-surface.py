#!/usr/bin/env python3
"""The public surface of a module, from its symbol graphs: one line per public symbol (its
path, its kind, its declaration), sorted, so that a change to the surface is a diff to review.

usage: api-surface.py GRAPH_DIR > api/MODULE.txt
"""
import glob
import json
import sys


def lines(directory):
    seen = set()
    for path in sorted(glob.glob(f"{directory}/*.symbols.json")):
        with open(path, encoding="utf-8") as handle:
            graph = json.load(handle)
        for symbol in graph["symbols"]:
            name = ".".join(symbol["pathComponents"])
            kind = symbol["kind"]["identifier"].removeprefix("swift.")
            declaration = "".join(part["spelling"] for part in symbol.get("declarationFragments", []))
            seen.add(f"{name}  [{kind}]  {' '.join(declaration.split())}")
    return sorted(seen)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for line in lines(sys.argv[1]):
        print(line)
