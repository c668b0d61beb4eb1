"""Judge review 60's variants (tests/review60_variants.py) in process, with the report
text of each check: python tests/review60_run.py 05_normalisation [name-substring]."""

import json
import sys
import time

from course.authoring.variants import answers_of
from tests.review60_variants import GROUPS
from tests.test_mutants import max_scores, reports_in_process

want = sys.argv[1]
sub = sys.argv[2] if len(sys.argv) > 2 else ""
for group in GROUPS:
    if group.ASSIGNMENT != want:
        continue
    full = max_scores(group)
    for kind, variants in (("mutant", group.MUTANTS), ("alternate", group.ALTERNATES)):
        for v in variants:
            if sub not in v.name:
                continue
            for code in answers_of(group, v).values():
                compile(code, v.name, "exec")
            t = time.time()
            judged = reports_in_process(group, v)
            rec = {
                "assignment": group.ASSIGNMENT, "kind": kind, "name": v.name,
                "points": {c: [judged[c][0], full[c]] for c in full},
                "reports": {c: judged[c][1] for c in full if judged[c][0] < full[c]},
                "seconds": round(time.time() - t, 1),
            }
            print(json.dumps(rec), flush=True)
