#!/usr/bin/env python3
"""The source tree's layering, as README.md's Layout section states it.

- src/meson.build lists the folders of src/ in data-flow order; a file of
  src/F includes (with "G/...") only folders G listed before F, or F itself.
  So nothing below the job layer includes a job, and folders form no circle.
- Within a folder, headers form no include circle.
- Public headers (include/zerofold/) include only public headers.
- No folder of src/ holds more than MAX_SOURCES .cc files (a folder that
  grows past it has two jobs).
- Every folder of src/ is in the README's folder tree, and the tree names
  no folder that does not exist.

Run: /usr/bin/python3 tests/layers_test.py (from anywhere).
"""
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
MAX_SOURCES = 14
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_order():
    with open(os.path.join(SRC, "meson.build"), encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"^subdir\('(\w+)'\)", text, re.M)


def includes(path):
    with open(path, encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def source_files(folder):
    d = os.path.join(SRC, folder)
    return sorted(n for n in os.listdir(d) if n.endswith((".h", ".cc")))


class Layers(unittest.TestCase):
    def test_every_folder_is_in_the_build_order(self):
        on_disk = sorted(n for n in os.listdir(SRC) if os.path.isdir(os.path.join(SRC, n)))
        self.assertEqual(sorted(folder_order()), on_disk)

    def test_folders_include_only_earlier_folders(self):
        order = folder_order()
        rank = {f: i for i, f in enumerate(order)}
        bad = []
        for folder in order:
            for name in source_files(folder):
                for inc in includes(os.path.join(SRC, folder, name)):
                    top = inc.split("/")[0]
                    if top == "zerofold" or top not in rank:
                        continue
                    if rank[top] > rank[folder]:
                        bad.append(f"src/{folder}/{name} includes {inc} ({top} comes after {folder})")
        self.assertEqual(bad, [])
        self.assertGreater(sum(len(source_files(f)) for f in order), 100)  # the walk saw the tree

    def test_no_header_circle_within_a_folder(self):
        cycles = []
        for folder in folder_order():
            graph = {}
            for name in source_files(folder):
                if name.endswith(".h"):
                    deps = [i.split("/", 1)[1] for i in includes(os.path.join(SRC, folder, name))
                            if i.startswith(folder + "/")]
                    graph[name] = deps
            # A module is a header and the .cc of the same name: a.h (or a.cc)
            # using b.h while b.h (or b.cc) uses a.h is a circle of modules.
            # A header with no .cc of its own (an internal header shared by
            # the .cc files of one module, zero/planner.h) belongs to the
            # modules that include it.
            names = source_files(folder)
            for name in names:
                if name.endswith(".cc"):
                    header = name[:-3] + ".h"
                    if header in graph:
                        graph[header] = sorted(set(graph[header]) | {
                            i.split("/", 1)[1] for i in includes(os.path.join(SRC, folder, name))
                            if i.startswith(folder + "/") and i.split("/", 1)[1] != header
                            and i.split("/", 1)[1][:-2] + ".cc" in names})
            state = {}

            def visit(n, stack):
                state[n] = 1
                for m in graph.get(n, []):
                    if state.get(m) == 1:
                        cycles.append(f"src/{folder}: " + " -> ".join(stack[stack.index(m):] + [m]))
                    elif m in graph and m not in state:
                        visit(m, stack + [m])
                state[n] = 2

            for n in graph:
                if n not in state:
                    visit(n, [n])
        self.assertEqual(cycles, [])

    def test_public_headers_include_only_public_headers(self):
        pub = os.path.join(ROOT, "include", "zerofold")
        bad = [f"{n}: {i}" for n in os.listdir(pub) for i in includes(os.path.join(pub, n))
               if not i.startswith("zerofold/")]
        self.assertEqual(bad, [])

    def test_folders_stay_small(self):
        big = [f"src/{f}: {n} sources" for f in folder_order()
               if (n := sum(1 for s in source_files(f) if s.endswith(".cc"))) > MAX_SOURCES]
        self.assertEqual(big, [])

    def test_readme_tree_names_every_folder(self):
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        section = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
        named = set(re.findall(r"^\s+src/(\w+)", section, re.M))
        self.assertEqual(named, set(folder_order()))


if __name__ == "__main__":
    unittest.main(verbosity=1)
