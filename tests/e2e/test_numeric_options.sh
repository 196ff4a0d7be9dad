# Every numeric option of every tool (gpt-train and build-indexmap have their own tests) is read
# within its range. Generated from each tool's --help, where a numeric option shows its range
# (N[1..1000], X[0..1]; an open end empty, for an integer its type's limit): -1, 0, a huge value and a non-number are each either
# accepted (inside the range) or a usage error, exit 2, naming the option and its range; never a
# wrap-around, a crash or an exit 1. A numeric default shown as `arg (=5)` is an option without a
# range and fails the test.
python3 - "$BIN" <<'PY'
import os, re, subprocess, sys

bin_dir = sys.argv[1]
# The tools (tools/<name>/), not the test programs that share $BIN (unit-tests, dist-selftest, ...).
tools = sorted(t for t in os.listdir(os.path.join(os.environ["ROOT"], "tools"))
               if t not in ("gpt-train", "build-indexmap") and os.access(os.path.join(bin_dir, t), os.X_OK))
assert len(tools) >= 8, tools
values = ["-1", "0", "99999999999999999999999", "abc"]
checked = 0
for tool in tools:
    exe = os.path.join(bin_dir, tool)
    help_text = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True).stdout
    unranged = re.findall(r"^\s+(--[a-z0-9-]+)(?:\s\[ -[a-z] \])? arg \(=-?[0-9.]+\)", help_text, re.M)
    if unranged:
        sys.exit(f"FAILED: {tool}: numeric options without a range: {unranged}")
    options = re.findall(r"(--[a-z0-9-]+) ([NX])\[([^.\]]*)\.\.([^\]]*)\]", help_text)
    for opt, kind, lo, hi in options:
        # An open end of an integer option is its type's limit, at most 64 bits.
        low = float(lo) if lo else (-2.0**63 if kind == "N" else float("-inf"))
        high = float(hi) if hi else (2.0**64 if kind == "N" else float("inf"))
        for v in values:
            try:
                x = float(v)
                inside = low <= x <= high and (kind == "X" or x == int(x))
            except ValueError:
                inside = False
            r = subprocess.run([exe, opt, v], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, timeout=60)
            err = r.stderr
            rejected = r.returncode == 2 and f"{opt} must be " in err
            if inside:
                if rejected or r.returncode not in (0, 1, 2) or (r.returncode == 1 and opt in err):
                    sys.exit(f"FAILED: {tool} {opt} {v}: inside {kind}[{lo}..{hi}] but exit {r.returncode}: {err}")
            else:
                if not rejected:
                    sys.exit(f"FAILED: {tool} {opt} {v}: outside {kind}[{lo}..{hi}] but exit {r.returncode}: {err}")
                if (lo and lo not in err) or (hi and hi not in err):
                    sys.exit(f"FAILED: {tool} {opt} {v}: the message does not give the range: {err}")
            checked += 1
print(f"{checked} option values checked over {len(tools)} tools")
if checked < 4 * 40:
    sys.exit(f"FAILED: only {checked} values checked: are the ranges still shown in --help?")
PY
