"""Counts read from one callgrind output file, shared by scripts/e2e-cache-sim.sh
and scripts/serve-cg.sh (import it with scripts/ on sys.path)."""
import re


def malloc_calls(text):
    """The calls to `malloc` recorded in a callgrind file's text."""
    mallocs, names, callee = 0, {}, None
    for line in text.splitlines():
        m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
        if m:
            if m.group(3):
                names[m.group(2)] = m.group(3).strip()
            if m.group(1) == "cfn":
                callee = names.get(m.group(2))
            continue
        m = re.match(r"calls=(\d+)", line)
        if m and callee == "malloc":
            mallocs += int(m.group(1))
    return mallocs
