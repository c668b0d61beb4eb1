"""nbgrader settings of a learner's `course lab` (its JUPYTER_CONFIG_DIR is this folder).

The Assignments tab fetches into and submits from work/, where `course lab` puts the
learner's copies: with nbgrader's default (".", the lab's root, the course folder) Fetch
made a blank <course>/01_backprop/ beside work/ and Submit sent that one, never the work in
work/01_backprop/. nbgrader's Fetch refuses a folder that exists (never overwrites it).

The tab (nbgrader/server_extensions/assignment_list/handlers.py) reads its settings twice:
in the lab's root, where the course's nbgrader_config.py is, for `assignment_dir`; then
again in that folder, work/, where it finds only this file: so this file brings the
course's settings (the exchange, the course id) wherever no nbgrader_config.py is beside it.
The instructor's lab and a class's hub never read this folder.
"""

import os
from pathlib import Path

c = get_config()  # noqa: F821 (injected by traitlets)

_course = Path(os.environ.get("COURSE_ROOT", "") or "/nonexistent")
if (_course / "nbgrader_config.py").is_file():
    if not Path("nbgrader_config.py").is_file():  # e.g. work/: no course settings there
        load_subconfig("nbgrader_config.py", path=str(_course))  # noqa: F821 (traitlets)
    c.Exchange.assignment_dir = str(_course / "work")
