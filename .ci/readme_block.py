"""Print the shell block of README.md that follows the marker <!-- ci:NAME -->."""

import re
import sys

text = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r"<!-- ci:" + re.escape(sys.argv[2]) + r" -->\s*```(?:bash|sh)?\n(.*?)```", text, re.S)
if not m:
    sys.exit(f"README.md has no block marked <!-- ci:{sys.argv[2]} -->")
print(m.group(1))
